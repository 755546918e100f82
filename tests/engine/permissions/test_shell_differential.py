"""The bash walker against bash itself, on generated command lines.

Every command name the generator uses is a recorder script in a sandbox folder (the
only folder on PATH): run by bash, it appends its argv to a log. Bash then runs each
generated line inside that folder, and whatever it really started must be among the
commands :func:`analyze` found, with the same arguments; every file it created must be
a write redirection the analysis reported. A line the analysis doubts asks the user,
so it needs no agreement; a line it reads without doubt must also pass ``bash -n``.
Nothing outside the temporary folder is touched: the names are recorders, redirection
targets are plain names in the folder and no builtin that changes directory or runs
code is generated.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from loom_engine.permissions.shell import SimpleCommand, Word, analyze

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

NAMES = ("c0", "c1", "c2")
UNIT, RECORD = "\x1f", "\x1e"
# One write per record: a process substitution's recorder runs at the same time as others.
RECORDER = f"""#!/bin/sh
r="${{0##*/}}"
for a in "$@"; do r="$r{UNIT}$a"; done
printf '%s{RECORD}' "$r" >> "$LOOM_RECORD"
"""
TARGETS = ("f1", "f2", "out.txt", "e")

# -- the generator -----------------------------------------------------------------

PLAIN = st.text(alphabet="abcxyz019._-=", min_size=1, max_size=5)
QUOTED_TEXT = st.text(alphabet="ab ;|&<>()#*?{}~$`\\\"'\n", max_size=6)


@st.composite
def inner_command(draw: st.DrawFn) -> str:
    """A simple command for inside $(...) or backquotes (no backslash, no backquote)."""
    name = draw(st.sampled_from(NAMES))
    args = draw(st.lists(PLAIN, max_size=2))
    return " ".join([name, *args])


@st.composite
def piece(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return shlex.quote(draw(QUOTED_TEXT))  # '...'
    if kind == 1:
        text = draw(QUOTED_TEXT)
        escaped = "".join("\\" + c if c in '$`"\\' else c for c in text)
        return f'"{escaped}"'
    if kind == 2:
        return "\\" + draw(st.sampled_from(list(";|&<> ()'\"#*")))
    if kind == 3:
        return f"$({draw(inner_command())})"
    if kind == 4:
        return f"`{draw(inner_command())}`"
    if kind == 5:
        return f'"a $({draw(inner_command())}) b"'
    if kind == 6:
        return draw(st.sampled_from(["$NOPE", "${NOPE}", '"$NOPE"', "${NOPE:-d}", "$'a\\tb'",
                                     "$1", "~", "{a,b}", "x{1..2}", "\\\n", "a\\\nb", "#x",
                                     "$'a;b'", '$"t"', "$", "a$", "'#'"]))
    return draw(PLAIN)


@st.composite
def word(draw: st.DrawFn) -> str:
    return "".join(draw(st.lists(piece(), min_size=1, max_size=3)))


@st.composite
def redirect(draw: st.DrawFn) -> str:
    target = draw(st.sampled_from(TARGETS))
    return draw(st.sampled_from([f"> {target}", f">>{target}", f"2> {target}", "2>&1", "< in",
                                 f"&> {target}", f">| {target}", "<<< word", f"<<< $({draw(inner_command())})",
                                 ">/dev/null", f"1>{target}"]))


@st.composite
def simple(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.integers(0, 5)) == 0:
        parts.append(f"A={draw(PLAIN)}")
    parts.append(draw(st.sampled_from(NAMES)))
    parts.extend(draw(st.lists(word(), max_size=3)))
    parts.extend(draw(st.lists(redirect(), max_size=2)))
    if draw(st.integers(0, 6)) == 0:
        return f"bash -c {shlex.quote(' '.join(parts))}"
    return " ".join(parts)


def heredoc(draw: st.DrawFn, head: str) -> str:
    quoted = draw(st.booleans())
    body = draw(st.sampled_from(["plain text", "$NOPE and more", f"x $({draw(inner_command())}) y",
                                 "a \\$(c0 no) b", "tab\there"]))
    delimiter = "'EOF'" if quoted else "EOF"
    if draw(st.booleans()):
        return f"{head} <<-{delimiter}\n\t{body}\n\tEOF\n"
    return f"{head} <<{delimiter}\n{body}\nEOF\n"


def statement(draw: st.DrawFn, depth: int) -> str:
    kind = draw(st.integers(0, 9 if depth < 2 else 3))
    if kind <= 3:
        return draw(simple())
    if kind == 4:
        return f"( {statement(draw, depth + 1)} )"
    if kind == 5:
        return f"{{ {statement(draw, depth + 1)}; }}"
    if kind == 6:
        return f"! {draw(simple())}"
    if kind == 7:
        return f"if {draw(simple())}; then {statement(draw, depth + 1)}; else {draw(simple())}; fi"
    if kind == 8:
        return f"{draw(simple())} <({draw(inner_command())})"
    left = statement(draw, depth + 1)
    op = draw(st.sampled_from(["&&", "||", ";", "|", "|&", "\n", "# c0 hidden\n", "&"]))
    return f"{left} {op} {statement(draw, depth + 1)}"


@st.composite
def command_line(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 5)) == 0:
        return heredoc(draw, draw(simple()))
    return statement(draw, 0)


# -- running bash ------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("bash-sandbox")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    for name in NAMES:
        script = bin_dir / name
        script.write_text(RECORDER)
        script.chmod(0o755)
    assert BASH is not None
    (bin_dir / "bash").symlink_to(BASH)
    return base


def run_in_sandbox(sandbox: Path, line: str, n: int) -> tuple[list[list[str]], set[str]]:
    """What bash ran (argv lists) and which files it created, in a fresh folder."""
    work = sandbox / f"run{n}"
    work.mkdir()
    (work / "in").write_text("input\n")
    log = sandbox / f"log{n}"
    env = {"PATH": str(sandbox / "bin"), "LOOM_RECORD": str(log), "HOME": str(work),
           "LC_ALL": "C"}
    assert BASH is not None
    subprocess.run([BASH, "--norc", "--noprofile", "-c", line], cwd=work, env=env,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=20, check=False)
    records = log.read_text() if log.exists() else ""
    ran = [r.split(UNIT) for r in records.split(RECORD) if r]
    created = {p.name for p in work.iterdir()} - {"in"}
    shutil.rmtree(work)
    log.unlink(missing_ok=True)
    return ran, created


def _matches(words: tuple[Word, ...], argv: list[str]) -> bool:
    """Literal words must be exactly one argument each; an expansion, a glob, a brace or
    a tilde word may stand for any number of arguments (word splitting, empty output;
    the manager expands '~' itself)."""
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(words):
            result = j == len(argv)
        elif words[i].literal and not (words[i].glob or words[i].brace or words[i].tilde):
            result = j < len(argv) and argv[j] == words[i].text and go(i + 1, j + 1)
        else:
            result = any(go(i + 1, k) for k in range(j, len(argv) + 1))
        memo[i, j] = result
        return result

    return go(0, 0)


def _seen(commands: tuple[SimpleCommand, ...], argv: list[str]) -> bool:
    return any(_matches(c.words, argv) for c in commands)


RUNS = iter(range(10**9))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(line=command_line())
def test_every_command_bash_runs_is_one_the_analysis_found(sandbox: Path, line: str) -> None:
    analysis = analyze(line)
    assume(not analysis.doubt)
    assert BASH is not None
    syntax = subprocess.run([BASH, "-n", "-c", line], capture_output=True, timeout=20, check=False,
                            env={"PATH": str(sandbox / "bin")})
    assert syntax.returncode == 0, (line, syntax.stderr)
    ran, created = run_in_sandbox(sandbox, line, next(RUNS))
    for argv in ran:
        assert _seen(analysis.commands, argv), (line, argv, analysis.commands)
    writes = [r.target for c in analysis.commands for r in c.redirects if r.kind == "write"]
    for name in created:
        assert any(t.text == name or not t.literal for t in writes), (line, name, writes)


def test_the_recorder_sees_what_bash_runs(sandbox: Path) -> None:
    """The oracle itself: a known line gives the expected records and files."""
    ran, created = run_in_sandbox(sandbox, "c0 'a b' $(c1 x) > f1; c2 \"q\" | c1", -1)
    assert sorted(ran) == sorted([["c1", "x"], ["c0", "a b"], ["c2", "q"], ["c1"]])
    assert created == {"f1"}


@pytest.mark.parametrize("line", [
    "c0 a && c1 'b c' || c2 \"$(c0 x)\"",
    "( c0 ) ; { c1 a; } | c2 >> f1",
    "if c0; then c1 `c2 y`; else c0; fi",
    "c0 <<EOF\nhello $(c1 z)\nEOF\n",
    "bash -c 'c0 a > f2'",
])
def test_typical_lines_are_read_without_doubt(sandbox: Path, line: str) -> None:
    analysis = analyze(line)
    assert analysis.doubt == ""
    ran, _ = run_in_sandbox(sandbox, line, next(RUNS))
    assert ran and all(_seen(analysis.commands, argv) for argv in ran)


# Random shell-ish text (never run, only checked with `bash -n`): whatever the analysis
# reads without doubt must be a line bash itself accepts.
SHELLISH = st.lists(st.sampled_from([*"ab /.~-*?[]{},;&|<>()$`'\"\\#=!\n\t019", "c0", "rm",
                                     "$(", "<<EOF\n", "EOF", "2>&1", ">/dev/null", "&&", "||",
                                     "if ", "then ", "fi", "{ ", " }", "<(", "${", "\\\n", "\r",
                                     "<<<", "'x'", '"y"', "$'z'", "é"]),
                    max_size=25).map("".join)


@settings(max_examples=300, deadline=None)
@given(line=SHELLISH)
def test_what_the_analysis_reads_without_doubt_bash_accepts(line: str) -> None:
    analysis = analyze(line)
    assume(not analysis.doubt)
    assert BASH is not None
    # On stdin: a line may start with '-', which `bash -c` would take as an option.
    syntax = subprocess.run([BASH, "-n"], input=line.encode(), capture_output=True,
                            timeout=20, check=False, env={"PATH": "/nonexistent"})
    assert syntax.returncode == 0, (line, syntax.stderr)
