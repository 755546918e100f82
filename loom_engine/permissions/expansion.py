"""What bash will make of a command's words, so that the files it really touches are
checked rather than the text the model wrote.

* Tilde forms: ``~`` and ``~/x`` (``$HOME``), ``~user``, ``~+`` (the working directory);
  ``~-`` (``$OLDPWD``) and the directory-stack forms cannot be known and are refused.
* Pathname expansion (globs) as bash does it by default (no dotglob, nullglob, extglob
  or globstar): a pattern that matches nothing stays as written. Every directory the
  expansion lists counts as read too.
* Physical resolution that refuses ``/proc`` and ``/dev/fd``: ``/proc/self/cwd`` is the
  *shell's* directory, not Loom's, so Loom cannot resolve such a path for it.
* Logical ``cd`` (bash's default ``cd -L``): ``deep/../..`` drops ``deep`` as text, even
  when ``deep`` is a symlink.
* A walk of the trees a recursive, symlink-following command would enter, looking for a
  symlink that leads out of the workspace.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

Key = TypeVar("Key")
Answer = TypeVar("Answer")

MAX_GLOB_ENTRIES = 20_000
MAX_WALK_ENTRIES = 20_000
_MAX_SYMLINK_HOPS = 40
# Paths whose meaning depends on the process that opens them.
_MAGIC_ROOTS = ("/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr")
_MAGIC_PREFIXES = tuple(root + "/" for root in _MAGIC_ROOTS)


class Unknowable(Exception):
    """What a word or path will be at run time cannot be known with certainty."""


def remembered(answers: dict[Key, Answer | Unknowable], key: Key, work: Callable[[], Answer]) -> Answer:
    """``work()``'s answer, found once per ``key`` in ``answers`` (one check's memo); an
    Unknowable answer is raised again each time it is asked."""
    if key not in answers:
        try:
            answers[key] = work()
        except Unknowable as exc:
            answers[key] = exc
    answer = answers[key]
    if isinstance(answer, Unknowable):
        raise Unknowable(str(answer))
    return answer


# -- tilde -------------------------------------------------------------------------------


def expand_tilde(raw: str, text: str, logical_cwd: Path) -> str:
    """``text`` after bash's tilde expansion (``raw`` is the word as written, to tell an
    unquoted ``~`` from a quoted one)."""
    if not raw.startswith("~") or not text.startswith("~"):
        return text
    prefix, sep, rest = text.partition("/")
    raw_prefix = raw.partition("/")[0]
    if any(ch in raw_prefix for ch in "'\"\\$`"):
        return text  # a quoted tilde prefix is not expanded
    name = prefix[1:]
    if name == "":
        home = os.environ.get("HOME") or _home_of(None)
        if home is None:
            raise Unknowable("'~' names a home directory this check cannot find")
        base = home
    elif name == "+":
        base = str(logical_cwd)
    elif name == "-" or re.fullmatch(r"[+-]?\d+", name):
        raise Unknowable(f"'{prefix}' names a directory ($OLDPWD or the directory stack) "
                         "this check cannot know")
    else:
        found = _home_of(name)
        if found is None:
            return text  # no such user: bash leaves the word alone
        base = found
    return base + (sep + rest if sep else "")


def _home_of(user: str | None) -> str | None:
    try:
        entry = pwd.getpwnam(user) if user is not None else pwd.getpwuid(os.getuid())
    except (KeyError, OSError):
        return None
    return entry.pw_dir


# -- globs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobResult:
    words: tuple[str, ...]      # what the word becomes (itself when nothing matched)
    listed: tuple[str, ...]     # directories read to expand it (absolute)


def has_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def expand_glob(pattern: str, cwd: Path) -> GlobResult:
    """Bash's pathname expansion of an unquoted ``pattern`` run in ``cwd``."""
    absolute = pattern.startswith("/")
    parts = [p for p in pattern.split("/") if p]
    trailing_slash = pattern.endswith("/")
    start = "/" if absolute else ""
    current = [start]
    listed: list[str] = []
    budget = [MAX_GLOB_ENTRIES]
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        nxt: list[str] = []
        if not has_glob(part):
            for prefix in current:
                nxt.append(prefix + part)
        else:
            matcher = _compile(part)
            for prefix in current:
                folder = os.path.join(cwd, prefix) if prefix else str(cwd)
                listed.append(os.path.normpath(folder))
                for name in _list(folder, budget):
                    if name.startswith(".") and not part.startswith("."):
                        continue
                    if matcher(name):
                        nxt.append(prefix + name)
        if not last or trailing_slash:
            nxt = [p for p in nxt if os.path.isdir(os.path.join(cwd, p))]
            current = [p + "/" for p in nxt]
        else:
            current = [p for p in nxt if os.path.lexists(os.path.join(cwd, p))]
        if not current:
            return GlobResult((pattern,), tuple(listed))
    return GlobResult(tuple(sorted(current)), tuple(listed))


def _list(folder: str, budget: list[int]) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    budget[0] -= len(names)
    if budget[0] < 0:
        raise Unknowable("a pattern expands over too many files to check")
    return names


def _compile(part: str) -> Callable[[str], bool]:
    """A bash glob component (``*``, ``?``, ``[...]`` with ``!``/``^`` and classes)."""
    out: list[str] = []
    k = 0
    while k < len(part):
        ch = part[k]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end, body = _bracket(part, k)
            if end < 0:
                out.append(re.escape(ch))
            else:
                out.append(body)
                k = end
        else:
            out.append(re.escape(ch))
        k += 1
    regex = re.compile("".join(out), re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None


_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
            "lower": "a-z", "space": r"\s", "xdigit": "0-9A-Fa-f", "punct": r"!-/:-@\[-`{-~",
            "blank": r" \t", "word": r"\w", "print": r" -~", "graph": "!-~", "cntrl": r"\x00-\x1f"}


def _bracket(part: str, start: int) -> tuple[int, str]:
    """(index of the closing ']', regex) for the bracket expression at ``start``, or -1."""
    k = start + 1
    negate = k < len(part) and part[k] in "!^"
    if negate:
        k += 1
    items: list[str] = []
    first = True
    while k < len(part):
        ch = part[k]
        if ch == "]" and not first:
            body = "".join(items)
            return k, f"[{'^' if negate else ''}{body}]"
        first = False
        if ch == "[" and part.startswith("[:", k):
            close = part.find(":]", k + 2)
            if close < 0:
                return -1, ""
            name = part[k + 2:close]
            if name not in _CLASSES:
                return -1, ""
            items.append(_CLASSES[name])
            k = close + 2
            continue
        if ch == "-" and items and k + 1 < len(part) and part[k + 1] != "]":
            items.append("-")
        else:
            items.append(re.escape(ch))
        k += 1
    return -1, ""


# -- resolution ------------------------------------------------------------------------


def physical(path: str, cwd: Path) -> Path:
    """``path`` (relative to ``cwd``) with every symlink followed, as the kernel would for
    the shell; raises :class:`Unknowable` for paths through ``/proc`` or ``/dev/fd``."""
    return Path(walk_physical(path, cwd).path)


@dataclass(frozen=True)
class Walked:
    """Where :func:`physical` got to: the path so far, and the symlinks it followed to
    get there (they count towards the limit on the rest of the way)."""

    path: str
    hops: int = 0


def walk_physical(path: str, cwd: Path) -> Walked:
    """:func:`physical`, with the symlinks followed on the way."""
    joined = path if path.startswith("/") else os.path.join(cwd, path)
    return _walk(deque(joined.split("/")), Walked("/"), path)


class FolderWalks:
    """:func:`physical` for one check, where each folder's own symlinks are followed
    once for all the paths below it (the working directory for every file a command
    line names, a PATH folder for every program looked up in it). Like the check's
    other answers, a walk is kept only while nothing runs."""

    def __init__(self) -> None:
        self._walked: dict[str, Walked | None] = {}

    def physical(self, path: str, cwd: Path) -> Path:
        """``physical(path, cwd)``."""
        if path.startswith("/"):
            return physical(path, cwd)
        return self.physical_in(str(cwd), path, path, cwd)

    def physical_in(self, folder: str, rest: str, path: str, cwd: Path) -> Path:
        """``physical(path, cwd)`` for a ``path`` that, taken from ``cwd``, is ``rest``
        inside ``folder`` (``folder`` as taken from '/'): the folder is walked once, and
        only ``rest`` each time. Raises Unknowable as :func:`physical` would, naming
        ``path``."""
        if folder not in self._walked:
            try:
                self._walked[folder] = walk_physical(folder, Path("/"))
            except Unknowable:
                self._walked[folder] = None
        walked = self._walked[folder]
        if walked is None:  # the whole walk says why, as it would have
            return physical(path, cwd)
        return Path(_walk(deque(rest.split("/")), walked, path).path)


def _walk(todo: deque[str], start: Walked, path: str) -> Walked:
    resolved, hops = start.path, start.hops
    while todo:
        name = todo.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, name)
        if _magic(candidate):
            raise Unknowable(f"{path} goes through {candidate}, which means something else "
                             "to the shell than to this check")
        try:
            st = os.lstat(candidate)
        except OSError:
            resolved = candidate
            continue
        if not stat.S_ISLNK(st.st_mode):
            resolved = candidate
            continue
        hops += 1
        if hops > _MAX_SYMLINK_HOPS:
            raise Unknowable(f"{path}: too many levels of symbolic links")
        target = os.readlink(candidate)
        if target.startswith("/"):
            resolved = "/"
        todo.extendleft(reversed(target.split("/")))
    return Walked(resolved, hops)


def _magic(path: str) -> bool:
    return path in _MAGIC_ROOTS or path.startswith(_MAGIC_PREFIXES)


def logical_cd(current: Path, target: str) -> Path:
    """Where ``cd target`` (bash's default ``-L``) goes from the logical ``current``."""
    joined = target if target.startswith("/") else os.path.join(current, target)
    return Path(os.path.normpath(joined).replace("//", "/"))


# -- recursive, symlink-following commands ---------------------------------------------


def outward_symlink(tops: list[Path], inside: Callable[[Path], bool]) -> str:
    """A symlink under ``tops`` that leads out of the workspace (``inside`` says what is
    in), as a one-line reason, or '' when there is none. Inward symlinked folders are
    walked too (a follower goes there); the walk is bounded."""
    seen: set[Path] = set()
    budget = MAX_WALK_ENTRIES
    queue: deque[Path] = deque()
    for top in tops:
        try:
            real = physical(str(top), Path("/"))
        except Unknowable as exc:
            return str(exc)
        if real.is_dir():
            queue.append(real)
    while queue:
        folder = queue.popleft()
        if folder in seen:
            continue
        seen.add(folder)
        for entry in _scan(folder):
            budget -= 1
            if budget < 0:
                return "the folder holds too many files to check for symlinks that lead out"
            if entry.is_symlink():
                try:
                    target = physical(entry.path, folder)
                except Unknowable as exc:
                    return str(exc)
                if not inside(target):
                    return f"{entry.path} is a symlink to {target}, outside the workspace"
                if target.is_dir():
                    queue.append(target)
            elif entry.is_dir(follow_symlinks=False):
                queue.append(Path(entry.path))
    return ""


def _scan(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            yield from list(entries)
    except OSError:
        return
