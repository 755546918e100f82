"""What the commands in a bash line do: the command knowledge behind the permission
checks, kept apart from the syntax (:mod:`.shell` says which simple commands a line runs;
this module says what each of them reads, runs or changes).

Wrappers (``timeout``, ``sudo``, ``xargs``...), the built-in read-only commands and their
unsafe options, commands that run code the analysis cannot see, and ``cd`` targets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

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

_PATH_READERS = frozenset({"ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "diff",
                           "stat", "du"})
_NON_READERS = frozenset({"pwd", "echo", "which"})
_FIND_FORBIDDEN = re.compile(r"-(exec|execdir|ok|okdir|delete|fprint0?|fprintf|fls)")
_GIT_READ_ONLY = frozenset({"status", "diff", "log", "show"})
_RG_FORBIDDEN = ("--pre", "--hostname-bin", "--search-zip", "-z")
# Read a list of file names from a file: the names inside cannot be checked.
_NAME_LIST_OPTIONS = ("--files0-from", "-files0-from")
# Options (long, or letters of a short cluster) that make a recursive command follow the
# symlinks it finds inside the folders it walks.
_FOLLOW_LONG = {"grep": ("--dereference-recursive",), "rg": ("--follow",),
                "ls": ("--dereference",), "du": ("--dereference",), "diff": ("--recursive",),
                "find": ("-follow",)}
_FOLLOW_SHORT = {"grep": "R", "rg": "L", "ls": "L", "du": "L", "diff": "r", "find": "L"}


@dataclass(frozen=True)
class ReadOnlyCheck:
    """A built-in read-only command, and the paths it reads (to be checked)."""

    paths: tuple[str, ...]
    reads_cwd: bool  # with no path argument it reads the current directory
    # It walks folders and follows the symlinks it meets there (`grep -R`, `find -L`):
    # the trees it enters must be checked for symlinks that lead out of the workspace.
    follows: bool = False
    # Its first positional word is a pattern, not a file (grep, rg).
    pattern_first: bool = False


def read_only_command(words: Sequence[Word]) -> ReadOnlyCheck | None:
    """The paths a read-only built-in command reads, or None when the command is not one
    (or is used with an option that writes or runs something)."""
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
        k = 1
        while k < len(texts) and texts[k] in ("--no-pager", "-P"):
            k += 1
        if k >= len(texts) or texts[k] not in _GIT_READ_ONLY:
            return None
        args = words[k + 1:]
        if any(a.text.startswith(("--output", "--ext-diff")) for a in args):
            return None
        return ReadOnlyCheck(_path_arguments(args), reads_cwd=True)
    if name not in _PATH_READERS:
        return None
    args = words[1:]
    if name == "find" and any(_FIND_FORBIDDEN.fullmatch(a.text) for a in args):
        return None
    if name == "rg" and any(a.text.startswith(_RG_FORBIDDEN) and not a.procsub for a in args):
        return None
    if any(a.text.startswith(_NAME_LIST_OPTIONS) for a in args):
        return None
    return ReadOnlyCheck(_path_arguments(args), reads_cwd=True, follows=_follows(name, args),
                         pattern_first=name in ("grep", "rg"))


def _follows(name: str, args: Sequence[Word]) -> bool:
    """Whether ``name`` with ``args`` follows symlinks met while walking folders. A short
    cluster is searched for the letter as a whole (``-eR`` is ``-e R``): asking about a
    command that does not follow only costs a question."""
    long = _FOLLOW_LONG.get(name, ())
    short = _FOLLOW_SHORT.get(name, "")
    for word in args:
        t = word.text
        if t == "--":
            break
        if t in long or (name == "find" and t == "-L"):
            return True
        if short and t.startswith("-") and not t.startswith("--") and name != "find" \
                and short in t[1:]:
            return True
    return False


def _path_arguments(args: Sequence[Word]) -> tuple[str, ...]:
    """Every argument that might name a file: positional words, values after '=' and
    paths glued to short options (``-f../x``). Non-paths (patterns, numbers) resolve to
    harmless names inside the working directory, so checking them too only errs safe."""
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
        if "=" in t:
            value = t.split("=", 1)[1]
            if value:
                out.append(value)
            continue
        if not t.startswith("--"):
            m = re.search(r"[/~.]", t)
            if m:
                out.append(t[m.start():])
    return tuple(out)


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
