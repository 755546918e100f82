"""Loom's option tables against the real programs installed here (issue 19, hole 2).

Two comparisons, per read-only command of the knowledge table:

* **Parsing.** Every prefix of every long option (the table's and the program's own) is
  given to the real program, which says through glibc's getopt messages what it made of
  it: ambiguous, unrecognized, or the full option name and whether it takes a value.
  Loom must resolve the prefix the same way. Every short letter is probed likewise.
* **Behaviour.** Every option of every command is run for real in a workspace where a
  symlink and a name list lead outside, before and after the operands (and, when it
  reads outside, in every other spelling: each abbreviation, ``=value`` and next-word
  values, a short cluster, a glued value). Whenever the program shows what only
  reading outside shows, Loom must not allow the command, in default, accept-edits and
  plan mode; and after ``--`` the same words, now file names, stay allowed. git, which
  Loom holds no table for, is checked for its writing and running options.

A program that is not installed, or not the GNU one, is skipped with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_engine.permissions.find_args import PRIMARIES
from loom_engine.permissions.getopt import OptionTable, resolve_long
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.option_tables import READERS
from loom_engine.permissions.targets import CommandRun
from loom_engine.workspace import Workspace

from .getopt_lab import MODES, SECRET, Lab, make_lab

GETOPT_PROGRAMS = sorted(n for n, r in READERS.items() if r.options is not None and r.options.abbreviations)
_MISSING = "/nonexistent-loom-probe"  # an operand that makes a probed program stop at once


def program_path(name: str) -> str:
    """The installed program, or skip. rg may also come with the test environment's
    Python (the ripgrep wheels put it next to the interpreter)."""
    search = os.pathsep.join([os.environ.get("PATH", os.defpath), str(Path(sys.executable).parent)])
    found = shutil.which(name, path=search)
    if found is None:
        pytest.skip(f"{name} is not installed here, so its table cannot be compared with it")
    return found


def gnu_program(name: str) -> str:
    path = program_path(name)
    version = _run([path, "--version"]).stdout
    if "GNU" not in version:
        pytest.skip(f"{name} here is not the GNU program ({version.splitlines()[:1]}); the table "
                    "describes GNU's options")
    return path


@pytest.fixture(autouse=True)
def _probe_in_an_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Probed programs run with no operand but a missing file; where one still reads its
    working directory (`grep -r`), that is an empty folder."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=30, env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(argv, -1, "", str(exc))


# -- parsing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """What a parser made of ``--written``: 'ambiguous', 'unknown', or a key and arity
    (the key None when the program ran without naming the option)."""

    outcome: str
    key: str | None = None
    arity: str | None = None


def loom_reading(table: OptionTable, written: str) -> Reading:
    resolved = resolve_long(table, written)
    if resolved.option is not None:
        return Reading("option", resolved.option.key, resolved.option.arity)
    if any(o.name.startswith(written) for o in table.long) and table.abbreviations:
        return Reading("ambiguous")
    return Reading("unknown")


def real_reading(path: str, table: OptionTable, written: str) -> Reading:
    def key_of(name: str) -> str:
        option = table.long_named(name)
        return option.key if option is not None else f"--{name} (not in Loom's table)"

    with_value = _run([path, _MISSING, f"--{written}=x"]).stderr
    if "is ambiguous" in with_value:
        return Reading("ambiguous")
    if "unrecognized option" in with_value:
        return Reading("unknown")
    named = re.search(r"option '--(.+?)' doesn't allow an argument", with_value)
    if named:
        return Reading("option", key_of(named.group(1)), "none")
    bare = _run([path, _MISSING, f"--{written}"]).stderr
    named = re.search(r"option '--(.+?)' requires an argument", bare)
    if named:
        return Reading("option", key_of(named.group(1)), "required")
    # It took a value and runs without one: an optional value. The option is named only
    # when the program rejects the value ("invalid argument 'x' for '--color'").
    named = re.search(r"for '--(.+?)'", with_value)
    return Reading("option", key_of(named.group(1)) if named else None, "optional")


def real_long_names(path: str) -> set[str]:
    """Every long option the program has: `--=x` is a prefix of all of them, and glibc
    lists the candidates (bar aliases of the first, which the prefixes catch)."""
    err = _run([path, _MISSING, "--=x"]).stderr
    listed = err.partition("possibilities:")[2]
    return set(re.findall(r"'--([^']+)'", listed))


def prefixes(names: set[str]) -> list[str]:
    return sorted({name[:k] for name in names for k in range(1, len(name) + 1)})


@pytest.mark.parametrize("name", GETOPT_PROGRAMS)
def test_every_abbreviation_resolves_as_the_program_resolves_it(name: str) -> None:
    path = gnu_program(name)
    table = READERS[name].options
    assert table is not None
    real_names = real_long_names(path)
    assert real_names, f"{name} listed no options for `--=x`"
    ours = {o.name for o in table.long}
    assert real_names <= ours, f"options of {name} missing from Loom's table: {sorted(real_names - ours)}"
    mismatches = []
    written_forms = [*prefixes(ours | real_names), "zz-no-such-option", "no-such"]
    for written in written_forms:
        real = real_reading(path, table, written)
        loom = loom_reading(table, written)
        same = real == loom or (real.key is None and real.outcome == loom.outcome
                                and real.arity == loom.arity)
        if not same:
            mismatches.append(f"--{written}: {name} reads {real}, Loom reads {loom}")
    assert not mismatches, "\n".join(mismatches)
    assert len(written_forms) > 20


@pytest.mark.parametrize("name", GETOPT_PROGRAMS)
def test_every_short_option_is_read_as_the_program_reads_it(name: str) -> None:
    path = gnu_program(name)
    table = READERS[name].options
    assert table is not None
    mismatches = []
    version = _run([path, "--version"]).stdout.partition("\n")[0]
    for letter in string.ascii_letters + string.digits:
        # An unknown option after the letter: reported when the letter takes no value,
        # taken as its value when it does (so `tail -F` never starts following).
        probe = _run([path, f"-{letter}", "--zz-no-such-option"])
        err = probe.stderr
        if "invalid option" in err:
            real = "unknown"
        elif "unrecognized option '--zz-no-such-option'" in err or version in probe.stdout \
                or "option used in invalid context" in err:  # tail's -5 outside `tail -5 f`
            real = "no value"
        else:
            err = _run([path, _MISSING, f"-{letter}"]).stderr
            real = "required" if "requires an argument" in err else f"unclear: {err[:80]!r}"
        arity = table.short.get(letter)
        loom = "unknown" if arity is None else "required" if arity == "required" else "no value"
        if real != loom:
            mismatches.append(f"-{letter}: {name} reads {real}, Loom reads {loom}")
    assert not mismatches, "\n".join(mismatches)


def test_rg_takes_no_abbreviation_and_every_flag_of_the_table() -> None:
    path = program_path("rg")
    table = READERS["rg"].options
    assert table is not None and not table.abbreviations
    # `--generate complete-bash` lists every flag rg 14+ has.
    listed = _run([path, "--generate", "complete-bash"]).stdout
    if not listed:
        pytest.skip("this rg cannot list its flags (older than 14)")
    flags = set(re.findall(r"(?<=\s)--([a-z0-9][a-z0-9-]*)", listed))
    ours = {o.name for o in table.long}
    assert flags <= ours, f"rg flags missing from Loom's table: {sorted(flags - ours)}"
    mismatches = []
    for option in table.long:
        cut = option.name[:-1]
        if table.long_named(cut) is None:
            err = _run([path, _MISSING, f"--{cut}"]).stderr
            if "unrecognized flag" not in err:
                mismatches.append(f"rg took --{cut} as an abbreviation: {err[:80]!r}")
        err = _run([path, _MISSING, f"--{option.name}"]).stderr
        real = "required" if "missing value" in err else "none"
        if real != option.arity:
            mismatches.append(f"--{option.name}: rg reads {real} ({err[:80]!r}), Loom {option.arity}")
    for letter in string.ascii_letters + string.digits + ".":
        err = _run([path, _MISSING, f"-{letter}"]).stderr
        real = ("unknown" if "unrecognized flag" in err else
                "required" if "missing value" in err else "none")
        arity = table.short.get(letter)
        if real != (arity or "unknown"):
            mismatches.append(f"-{letter}: rg reads {real}, Loom reads {arity or 'unknown'}")
    assert not mismatches, "\n".join(mismatches)


def test_find_primaries_are_whole_words_with_the_argument_count_of_the_table() -> None:
    path = gnu_program("find")
    mismatches = []
    for primary, takes in PRIMARIES.items():
        if primary in ("exec", "execdir", "ok", "okdir", "help", "-help", "version", "-version"):
            continue  # they run a command or print and stop; refused or harmless
        err = _run([path, _MISSING, f"-{primary}"]).stderr
        if "unknown predicate" in err or "invalid predicate" in err:
            mismatches.append(f"-{primary}: find does not know it")
        missing = any(m in err for m in ("missing argument", "needs an argument",
                                         f"invalid argument `-{primary}'"))
        if missing != (takes > 0):
            mismatches.append(f"-{primary}: find {'wants' if missing else 'takes no'} a value; "
                              f"the table says {takes}")
        if len(primary) > 3:
            err = _run([path, _MISSING, f"-{primary[:-1]}"]).stderr
            if primary[:-1] not in PRIMARIES and "unknown predicate" not in err \
                    and "invalid predicate" not in err:
                mismatches.append(f"find took -{primary[:-1]} as an abbreviation: {err[:80]}")
    help_text = _run([path, "--help"]).stdout
    listed = set(re.findall(r"(?<![\w-])-([a-z][a-z0-9_-]+)", help_text.partition("Operators")[2]
                            .partition("Other common options")[0]))
    unknown = sorted(p for p in listed if p not in PRIMARIES and not p.startswith("newer"))
    assert not unknown, f"find primaries missing from Loom's table: {unknown}"
    assert not mismatches, "\n".join(mismatches)


# -- behaviour ----------------------------------------------------------------------------


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return make_lab(tmp_path)


# A harmless letter of each command, to bundle with another (`-nR`, `-Rn`).
_CLUSTER_WITH = {"grep": "n", "diff": "a", "ls": "a", "du": "a", "rg": "n", "wc": "l"}
# Per command: options that go first, and the operands. The trap: `link_out` and
# `a/link` lead outside, `names` lists a file outside.
_TRAPS: dict[str, tuple[list[str], list[str]]] = {
    "grep": (["-n"], [SECRET, "."]),
    "diff": (["-N"], ["a", "b"]),
    "ls": (["-R"], ["."]),
    "du": (["-a", "-l"], []),  # -l: a file met twice is still listed; no operand: .
    "wc": (["-l"], []),
    "find": ([], ["."]),
    "rg": (["-n"], [SECRET, "."]),
}


# The options Loom refuses that only read (a list of file names): run like the others.
_NAME_LISTS = frozenset({"--files0-from", "-files0-from"})


@dataclass(frozen=True)
class Option:
    """One option of a command and every way to write it."""

    key: str
    spellings: tuple[tuple[str, ...], ...]  # the first is the plain one


def options_of(name: str) -> list[Option]:
    """Every option of ``name``: long ones by their name and each abbreviation Loom
    resolves to them (the parsing tests show the program resolves them alike), with a
    value ('names') as ``=value`` and as the next word where they take one; short ones
    alone, bundled before and after a harmless letter, and with a glued value."""
    reader = READERS[name]
    if reader.options is None:
        return [Option("-" + p if not p.startswith("-") else p,
                       ((f"-{p}", *["names"] * takes),)) for p, takes in PRIMARIES.items()
                if p not in ("help", "-help", "version", "-version")] + \
            [Option(o, ((o,),)) for o in ("-L", "-H", "-P")]
    table = reader.options
    out: list[Option] = []
    for option in table.long:
        written = [option.name] + [option.name[:k] for k in range(len(option.name) - 1, 0, -1)
                                   if resolve_long(table, option.name[:k]).option == option]
        forms: list[tuple[str, ...]] = []
        for w in written:
            if option.arity == "none":
                forms.append((f"--{w}",))
            else:
                forms.extend([(f"--{w}=names",), (f"--{w}", "names")] if option.arity == "required"
                             else [(f"--{w}",), (f"--{w}=names",)])
        out.append(Option(option.key, tuple(forms)))
    other = _CLUSTER_WITH[name]
    for letter, arity in table.short.items():
        if arity == "none":
            forms = [(f"-{letter}",), (f"-{other}{letter}",), (f"-{letter}{other}",)]
        else:
            forms = [(f"-{letter}", "names"), (f"-{letter}names",), (f"-{other}{letter}names",)]
        out.append(Option("-" + letter, tuple(forms)))
    return out


@pytest.mark.parametrize("name", sorted(_TRAPS))
def test_whenever_the_program_reads_outside_loom_asks(lab: Lab, name: str) -> None:
    """Each option, in its plain spelling, is run for real before and after the operands;
    when that reads outside, so is every other spelling of it. Whenever the program shows
    what only reading outside shows, Loom must not allow the command in any mode. Options
    that write or run programs are not run at all: Loom must refuse them as written."""
    path = gnu_program(name) if name != "rg" else program_path(name)
    first, operands = _TRAPS[name]
    tried = leaked = asked = 0
    failures: list[str] = []

    def try_one(args: list[str]) -> bool:
        nonlocal tried, leaked, asked
        tried += 1
        command = " ".join([name, *args])
        loom = {mode: lab.behavior(command, mode) for mode in MODES}
        asked += all(b != "allow" for b in loom.values())
        reads_outside = lab.leaks([path, *args])
        leaked += reads_outside
        if reads_outside and any(b == "allow" for b in loom.values()):
            failures.append(f"`{command}` reads outside, and Loom allows it: {loom}")
        return reads_outside

    def placements(spelling: tuple[str, ...]) -> list[list[str]]:
        if name == "find":  # leading options, then starting points, then the expression
            return [[*spelling, *operands]] if spelling[0] in ("-L", "-H", "-P") else [[*operands, *spelling]]
        return [[*first, *spelling, *operands], [*first, *operands, *spelling]]

    for option in options_of(name):
        if option.key in READERS[name].refused - _NAME_LISTS:
            for spelling in option.spellings:
                for args in placements(spelling):
                    command = " ".join([name, *args])
                    if any(lab.behavior(command, mode) == "allow" for mode in MODES):
                        failures.append(f"`{command}` writes or runs something, and Loom allows it")
            continue
        plain = option.spellings[0]
        if not any([try_one(args) for args in placements(plain)]):
            continue
        for spelling in option.spellings[1:]:
            for args in placements(spelling):
                try_one(args)
        if name != "find":  # after `--` the same words are file names: nothing leads out
            quoted = [*first, "--", *operands, *plain]
            if not lab.leaks([path, *quoted]) and lab.behavior(" ".join([name, *quoted]), "default") != "allow":
                failures.append(f"`{' '.join([name, *quoted])}` reads only the workspace, yet Loom asks")
    print(f"{name}: {tried} commands run, {leaked} read outside, Loom asked for {asked}")
    assert leaked > 0, f"no option of {name} read outside: the trap is broken"
    assert not failures, "\n".join(failures)


def test_git_options_that_write_or_run_are_refused_in_every_spelling(tmp_path: Path) -> None:
    """git has no table in Loom (hundreds of options per subcommand): any long option
    that could abbreviate `--output` or `--ext-diff` is refused. Run for real, git takes
    `--output` (and writes the file); whether it takes a prefix depends on its version."""
    git = program_path("git")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b"}

    def git_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([git, *args], cwd=repo, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60)

    (repo / "f.txt").write_text("one\n")
    git_run("init", "-q")
    git_run("add", "f.txt")
    git_run("commit", "-qm", "one")
    (repo / "f.txt").write_text("two\n")
    taken: list[str] = []
    failures: list[str] = []
    for option in ("output", "ext-diff"):
        for k in range(1, len(option) + 1):
            for sub in ("diff", "log", "show"):
                out = repo / f"out-{sub}-{option}-{k}"
                word = f"--{option[:k]}=out-{sub}-{option}-{k}" if option == "output" else f"--{option[:k]}"
                done = git_run(sub, word)
                if out.exists() or (option == "ext-diff" and done.returncode == 0):
                    taken.append(f"git {sub} {word}")
                for mode in MODES:
                    pm = PermissionManager(Workspace.at(repo), mode=mode)  # type: ignore[arg-type]
                    decision = pm.check("bash", CommandRun(f"git {sub} {word}", str(repo)), is_read_only=False)
                    if decision.behavior == "allow":
                        failures.append(f"`git {sub} {word}` is allowed in {mode} mode")
    print(f"git took {len(taken)} spellings: {taken}")
    assert "git diff --output=out-diff-output-6" in taken, "git no longer writes --output: the test is stale"
    assert not failures, "\n".join(failures)
