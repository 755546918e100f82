"""What the commands in a bash line do: the command knowledge behind the permission
checks, kept apart from the syntax (:mod:`.shell` says which simple commands a line runs;
this module says what each of them reads, runs or changes).

Wrappers (``timeout``, ``sudo``, ``xargs``...), the built-in read-only commands (their
arguments read the way the program's own parser reads them: :mod:`.getopt` for the rule,
:mod:`.option_tables` for every option they take, :mod:`.find_args` for find), commands
that run code the analysis cannot see, and ``cd`` targets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .getopt import could_abbreviate
from .option_tables import READERS
from .shell_words import ASSIGNMENT, ShellDoubt, Word

# Looked through when matching allow rules: they change how, not what, runs.
_HARMLESS_WRAPPERS = frozenset({"timeout", "time", "nice", "nohup"})
# Looked through (generously) when matching deny and ask rules, so that
# `sudo rm` or `xargs rm` cannot dodge `bash(rm:*)`.
_DENY_LOOK_THROUGH = frozenset({
    "timeout", "time", "nice", "nohup", "env", "command", "builtin", "exec", "sudo", "doas",
    "xargs", "stdbuf", "ionice", "chrt", "taskset", "watch", "strace", "ltrace", "unbuffer",
    "setsid", "flock", "nsenter", "chroot", "runuser", "su",
})
# Commands that run a string or file of shell code the analysis cannot see into.
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh"})
_DURATION = re.compile(r"\d+(\.\d+)?[smhd]?")
_PROCSUB_PATH = "/dev/fd/63"


def strip_wrappers(words: Sequence[Word]) -> tuple[Word, ...]:
    """``timeout 60 nice -n 5 make test`` -> ``make test``."""
    rest = tuple(words)
    while rest and rest[0].literal and rest[0].text in _HARMLESS_WRAPPERS:
        skip = _wrapper_length(rest)
        if skip is None or skip >= len(rest):
            break
        rest = rest[skip:]
    return rest


def _wrapper_length(words: Sequence[Word]) -> int | None:
    """How many words the wrapper at ``words[0]`` (with its options) takes, or None."""
    texts = [w.text if w.literal else "\0" for w in words]
    name = texts[0]
    k = 1
    if name == "time":
        while k < len(texts) and texts[k] in ("-p", "--"):
            k += 1
        return k
    if name == "nohup":
        return k + 1 if k < len(texts) and texts[k] == "--" else k
    if name == "nice":
        if k < len(texts) and texts[k] in ("-n", "--adjustment") and k + 1 < len(texts):
            return k + 2 if re.fullmatch(r"[+-]?\d+", texts[k + 1]) else None
        if k < len(texts) and re.fullmatch(r"-n[+-]?\d+|-[+-]?\d+|--adjustment=[+-]?\d+", texts[k]):
            return k + 1
        return k
    if name == "timeout":
        while k < len(texts):
            t = texts[k]
            if t in ("--preserve-status", "--foreground", "-v", "--verbose"):
                k += 1
            elif t in ("-s", "--signal", "-k", "--kill-after"):
                k += 2
            elif re.fullmatch(r"(--signal|--kill-after)=\S+|-s\S+|-k\S+", t):
                k += 1
            elif t == "--":
                k += 1
                break
            else:
                break
        if k < len(texts) and _DURATION.fullmatch(texts[k]):
            return k + 1
        return None
    return None  # pragma: no cover


def deny_candidates(words: Sequence[Word], assignments: Sequence[Word] = ()) -> list[tuple[str, ...]]:
    """Word lists a deny or ask rule is matched against: the command as written, without
    wrappers, with ``/bin/rm`` read as ``rm``, and whatever ``sudo``/``env``/``xargs``...
    would run."""
    seen: set[tuple[str, ...]] = set()
    out: list[tuple[str, ...]] = []
    base = tuple(w.text for w in words)
    work = [base, tuple(w.text for w in strip_wrappers(words))]
    if assignments:
        work.append(tuple(w.text for w in assignments) + base)
    while work:
        cand = work.pop()
        if not cand or cand in seen or len(seen) > 400:
            continue
        seen.add(cand)
        out.append(cand)
        head = os.path.basename(cand[0])
        if head != cand[0] and head:
            work.append((head, *cand[1:]))
        if head == "find":
            for k in range(1, len(cand) - 1):
                if cand[k] in ("-exec", "-execdir", "-ok", "-okdir"):
                    work.append(cand[k + 1:])
        elif head in _DENY_LOOK_THROUGH:
            for k in range(1, len(cand)):
                if not cand[k].startswith("-") and not ASSIGNMENT.match(cand[k]):
                    work.append(cand[k:])
    return out


def runs_hidden_code(words: Sequence[Word]) -> str:
    """Why this command runs code the analysis cannot see (``eval``, ``sh -c``...), or ''."""
    if not words:
        return ""
    if not words[0].literal:
        return "the command name is an expansion"
    name = os.path.basename(words[0].text)
    if name in ("eval", "source", ".", "exec"):
        return f"'{name}' runs code this check cannot see"
    if name in _SHELLS and any(w.text.startswith("-") and "c" in w.text.lstrip("-") and
                               not w.text.startswith("--") for w in words[1:]):
        return f"'{name} -c' runs code this check cannot see"
    if name in ("xargs", "find", "env", "command", "builtin", "sudo", "doas") and any(
            os.path.basename(w.text) in _SHELLS | {"eval", "sh"} for w in words[1:]):
        return f"'{name}' starts a shell this check cannot see into"
    if name in _ARITHMETIC_BUILTINS and any(_arithmetic_runs_code(name, w.text) for w in words[1:]):
        return f"'{name}' evaluates an arithmetic expression, where $(...) runs commands"
    return ""


# Builtins that evaluate an array subscript (`printf -v 'a[$(cmd)]'`) or, for `let`, a
# whole expression as arithmetic: bash expands a $(...) or backticks found there and
# runs them, even when the word was quoted on the command line.
_ARITHMETIC_BUILTINS = frozenset({"printf", "read", "declare", "typeset", "local", "export", "readonly",
                                  "unset", "let", "test", "[", "wait", "mapfile", "readarray"})


def _arithmetic_runs_code(name: str, text: str) -> bool:
    expands = "$" in text or "`" in text
    return expands and (name == "let" or "[" in text)


# -- the built-in read-only commands --------------------------------------------------

_NON_READERS = frozenset({"pwd", "echo", "which"})
_GIT_READ_ONLY = frozenset({"status", "diff", "log", "show"})
# git options that write a file or run a program. git holds hundreds of options per
# subcommand, so instead of a table any long option that could abbreviate one is refused.
_GIT_REFUSED = ("output", "ext-diff")


@dataclass(frozen=True)
class ReadOnlyCheck:
    """A built-in read-only command, and the paths it reads (to be checked)."""

    paths: tuple[str, ...]
    reads_cwd: bool  # with no path argument it reads the current directory
    # It walks folders and follows the symlinks it meets there (`grep -R`, `find -L`):
    # the trees it enters must be checked for symlinks that lead out of the workspace.
    follows: bool = False
    # The words (among ``paths``) naming the trees it walks: its file operands, never a
    # pattern or another option's value; none: the working directory.
    walks: tuple[str, ...] = ()
    # How far into those trees it reads: not at all, a folder's own entries, or every
    # file below (``grep -r``, ``rg``, ``find``, ``du``, ``ls -R``).
    descends: Literal["none", "one", "all"] = "none"


def read_only_command(words: Sequence[Word]) -> ReadOnlyCheck | None:
    """The paths a read-only built-in command reads, or None when the command is not one
    (or is used with an option that writes or runs something, or one this check cannot
    read the way the program will)."""
    if not words or not all(w.literal or w.procsub for w in words):
        return None
    if any(w.brace for w in words):
        return None
    texts = [w.text for w in words]
    name = texts[0]
    if words[0].quoted:
        return None
    if name in _NON_READERS:
        # They read no files, but a glob still lists a directory.
        return ReadOnlyCheck(tuple(w.text for w in words[1:] if w.glob), reads_cwd=False)
    if name == "git":
        return _git_read_only(words)
    args = words[1:]
    # What the program sees for a <(...) word: a /dev/fd path, an operand like any file.
    seen = [_PROCSUB_PATH if w.procsub else w.text for w in args]
    reader = READERS.get(name)
    if reader is None:
        return None
    parsed = reader.parse(seen)
    keys = parsed.keys()
    if parsed.doubt or keys & reader.refused:
        return None
    keep = [not w.procsub for w in args]
    operands = [(k, t) for k, t in parsed.operands if keep[k]]
    values = [(k, t) for k, t in parsed.values() if keep[k]]
    late = [(k, t) for k, t in parsed.late_options if keep[k]]
    # Every word that may name a file, in the order written.
    paths = [t for _, t in sorted(operands + values + late, key=lambda kt: kt[0]) if t]
    trees = [t for _, t in operands]
    if reader.first_operand_pattern and not keys & reader.pattern_options:
        trees = trees[1:]
    trees += [g.value for g in parsed.given if g.key in reader.tree_options and g.value]
    walks = tuple(t for t in trees if t)
    descends: Literal["none", "one", "all"] = \
        "all" if reader.always or keys & reader.descends else "one" if reader.lists else "none"
    return ReadOnlyCheck(tuple(paths), reads_cwd=True,
                         follows=bool(keys & reader.follows), walks=walks, descends=descends)


def _git_read_only(words: Sequence[Word]) -> ReadOnlyCheck | None:
    texts = [w.text for w in words]
    k = 1
    while k < len(texts) and texts[k] in ("--no-pager", "-P"):
        k += 1
    if k >= len(texts) or texts[k] not in _GIT_READ_ONLY:
        return None
    args = words[k + 1:]
    if any(a.text.startswith("--") and could_abbreviate(a.text[2:], _GIT_REFUSED) for a in args):
        return None
    return ReadOnlyCheck(_git_path_arguments(args), reads_cwd=True)


def _git_path_arguments(args: Sequence[Word]) -> tuple[str, ...]:
    """Every git argument that might name a file: positional words, values after '=' and
    whatever follows the letter of a short option (``-O../order``). Non-paths
    (revisions, numbers) resolve to harmless names inside the working directory, so
    checking them too only errs safe."""
    out: list[str] = []
    options_done = False
    for word in args:
        if word.procsub:
            continue
        t = word.text
        if options_done or not t.startswith("-") or t == "-":
            if t != "-":
                out.append(t)
            continue
        if t == "--":
            options_done = True
            continue
        if t.startswith("--"):
            out.append(t.partition("=")[2])
            continue
        # Which letter of a cluster takes a value is not known: the rest after the first
        # letter, and from the first character that starts a path.
        out.append(t[2:])
        m = re.search(r"[/~.]", t)
        if m and m.start() > 2:
            out.append(t[m.start():])
    return tuple(p for p in out if p)


def cd_target(words: Sequence[Word]) -> str | None:
    """The directory a ``cd``/``pushd`` changes to ('~' for none), or None if not a cd.

    Raises ShellDoubt when the target cannot be known (``cd -``, ``cd $X``, ``popd``).
    """
    while words and words[0].literal and words[0].text in ("builtin", "command") and len(words) > 1:
        words = words[1:]
    if not words or not words[0].literal or words[0].text not in ("cd", "pushd", "popd"):
        return None
    if words[0].text == "popd":
        raise ShellDoubt("'popd' changes to a directory this check cannot know")
    args = [w for w in words[1:] if not (w.literal and w.text in ("-L", "-P", "-e", "-@", "--"))]
    if not args:
        if words[0].text == "pushd":
            raise ShellDoubt("'pushd' without a directory")
        return "~"
    target = args[0]
    if not target.literal or target.text == "-" or target.glob or target.brace or \
            target.text.startswith(("+", "-")):
        raise ShellDoubt(f"'{words[0].text} {target.raw}' changes to a directory this check "
                         "cannot know")
    return target.text
