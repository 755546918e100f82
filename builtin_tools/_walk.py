"""Which files a search sees: gitignore-aware walking, glob patterns and the `rg` binary.

glob, grep and ls must agree on the file set whether or not the `rg` binary is
available, so the Python walker here follows ripgrep's rules as Loom invokes it
(see :data:`RG_WALK_ARGS`):

* ``.gitignore`` files apply only inside a git repository (a folder with a ``.git``
  entry, at or above the file), from the repository root down; the nearest file's
  last matching line decides; a nested repository starts afresh.
* ``.git`` itself is never listed; other hidden files are.
* Symbolic links are not followed (and not listed by the search tools).
* A folder given explicitly is walked even when it is itself ignored; rules from
  ignore files above it are applied the way rg 14.1.0 does (see :class:`_Level`).

Gitignore lines are matched against each entry's own path. pathspec's matcher also
treats a path as matched when one of its parent folders matches, which is right for
checking a lone path but wrong inside a walk that prunes folders and may start inside
an ignored one (``grep path=node_modules/x``), where it would disagree with rg.
pathspec is used for the user-supplied ``ls`` ignore list, where that meaning fits.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from loom_engine.execution import CancelToken

# The flags that make rg select exactly the files :func:`walk` yields.
RG_WALK_ARGS: tuple[str, ...] = (
    "--no-config",  # a user's RIPGREP_CONFIG_PATH must not change results
    "--hidden",
    "--glob", "!.git",
    "--no-ignore-dot",  # .ignore / .rgignore: not part of Loom's rules
    "--no-ignore-global",  # core.excludesFile would need git config to mirror
    "--no-ignore-exclude",  # .git/info/exclude: same
)


# --------------------------------------------------------------------------- globs

def glob_to_regex(glob: str, *, braces: bool = True) -> str:
    """A regex (for ``fullmatch``) equivalent to a glob in ripgrep's globset syntax.

    ``*`` and ``?`` never match ``/``; ``**`` as a whole path component matches any
    number of folders; ``[...]`` / ``[!...]`` classes; ``{a,b}`` alternatives when
    ``braces``; a backslash makes the next character literal.
    """
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            if glob.startswith("**", i):
                starts_component = i == 0 or glob[i - 1] == "/"
                ends_component = i + 2 == n or glob[i + 2] == "/"
                if starts_component and ends_component:
                    if i + 2 == n:
                        out.append(".*")
                        i += 2
                    else:
                        out.append("(?:.*/)?")
                        i += 3
                    continue
                i += 2  # `a**b` is just a wildcard inside one component
            else:
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            cls, i = _char_class(glob, i)
            out.append(cls)
        elif ch == "{" and braces:
            close = _matching_brace(glob, i)
            if close < 0:
                out.append(re.escape(ch))
                i += 1
                continue
            alternatives = _split_top_level(glob[i + 1:close])
            out.append("(?:" + "|".join(glob_to_regex(a, braces=True) for a in alternatives) + ")")
            i = close + 1
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def _char_class(glob: str, start: int) -> tuple[str, int]:
    j = start + 1
    negate = j < len(glob) and glob[j] in "!^"
    if negate:
        j += 1
    body_start = j
    if j < len(glob) and glob[j] == "]":
        j += 1  # a `]` right after the opening is a member, not the end
    while j < len(glob) and glob[j] != "]":
        j += 1
    if j >= len(glob):
        return re.escape("["), start + 1  # unclosed: a literal bracket
    members = []
    for c in glob[body_start:j]:
        members.append("-" if c == "-" else re.escape(c))
    body = "".join(members)
    # A class never matches the path separator, as in git and globset.
    cls = f"[^/{body}]" if negate else f"(?:(?!/)[{body}])"
    return cls, j + 1


def _matching_brace(glob: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(glob):
        c = glob[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_top_level(body: str) -> list[str]:
    parts, depth, current, i = [], 0, [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            current.append(body[i:i + 2])
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts


@dataclass(frozen=True)
class PathGlob:
    """A file filter with ripgrep's meaning: no ``/`` → matches the file name at any
    depth; with ``/`` → matches the path relative to the search folder. A leading
    ``!`` excludes instead."""

    pattern: str
    text: str  # the pattern without `!`, `./` or a leading `/`
    regex: re.Pattern[str]
    basename_only: bool
    negated: bool

    @classmethod
    def compile(cls, pattern: str) -> PathGlob:
        text = pattern.strip()
        negated = text.startswith("!")
        if negated:
            text = text[1:]
        while text.startswith("./"):
            text = text[2:]
        basename_only = "/" not in text
        text = text.lstrip("/")
        if not text:
            raise ValueError(f"empty glob pattern {pattern!r}")
        return cls(pattern, text, re.compile(glob_to_regex(text), re.DOTALL), basename_only, negated)

    def matches(self, rel: str) -> bool:
        subject = rel.rsplit("/", 1)[-1] if self.basename_only else rel
        return (self.regex.fullmatch(subject) is not None) != self.negated

    def rg_prefilter(self) -> str | None:
        """The file-name part of the pattern, to narrow what rg reads, or None.

        :meth:`matches` still decides, so it must never be stricter than the full
        pattern. See :func:`rg_filter_args` for how rg is given it.
        """
        if self.negated:
            return None
        last = _last_component(self.text)
        if not last or "**" in last:
            return None
        return last


# `*.py`, `*.{ts,tsx}`: the globs rg may take as --glob (see rg_filter_args).
_EXTENSION_GLOB = re.compile(r"\*\.(?:[\w+-]+|\{[\w+-]+(?:,[\w+-]+)*\})")
RG_GLOB_TYPE = "loomglob"


@dataclass(frozen=True)
class RgFilter:
    """How rg is told to narrow a search to a glob's file names."""

    args: tuple[str, ...] = ()
    recheck_ignored: bool = False  # rg's --glob let ignored files through
    exact: bool = False  # rg selects exactly the glob's files: no need to match again


def rg_filter_args(glob: PathGlob) -> RgFilter:
    """rg arguments that narrow a search to ``glob``'s file names.

    rg's ``--glob`` is the quick way, but a file it matches skips the ignore rules and a
    matching folder is entered even when ignored. For an extension glob such folders
    are rare, so that is used and the results re-checked with :class:`IgnoreChecker`.
    Any other name glob becomes a one-off file type, which rg applies after its ignore
    rules: slower, but a glob such as `*` or `test_*` can never send rg into an ignored
    folder.
    """
    name = glob.rg_prefilter()
    if name is None:
        return RgFilter()
    # `*.py` and `**/*.py` both mean "this file name at any depth", as rg's filter does.
    exact = glob.text == "**/" + name or (glob.basename_only and glob.text == name)
    if _EXTENSION_GLOB.fullmatch(name):
        return RgFilter(("--glob", name), recheck_ignored=True, exact=exact)
    return RgFilter(("--type-add", f"{RG_GLOB_TYPE}:{name}", "--type", RG_GLOB_TYPE), exact=exact)


def _last_component(glob: str) -> str | None:
    depth = 0
    cut = -1
    for i, c in enumerate(glob):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "/":
            if depth:
                return None  # `{a,b/c}`: the file name is not one glob
            cut = i
    return glob[cut + 1:]


# --------------------------------------------------------------------------- gitignore

class IgnoreFile:
    """The lines of one ignore file, matched against paths relative to its folder."""

    def __init__(self, text: str) -> None:
        rules: list[tuple[str, bool, bool]] = []  # (regex, negated, dir_only)
        for raw in text.splitlines():
            parsed = _parse_ignore_line(raw)
            if parsed is not None:
                rules.append(parsed)
        # By regex group name: whether that line re-includes (a `!` line) what it matches.
        self.keeps = {f"r{i}": negated for i, (_, negated, _) in enumerate(rules)}
        # One alternation per file, last line first: the first alternative that
        # matches the whole path is the last matching line, which is the one git
        # honours. Folders see every rule; files only those without a trailing '/'.
        self.for_dirs = _alternation([(i, rx) for i, (rx, _, _) in enumerate(rules)])
        self.for_files = _alternation([(i, rx) for i, (rx, _, d) in enumerate(rules) if not d])

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a ``!`` line; None: no line matches."""
        rx = self.for_dirs if is_dir else self.for_files
        if rx is None:
            return None
        m = rx.fullmatch(rel)
        if m is None or m.lastgroup is None:
            return None
        return not self.keeps[m.lastgroup]


def _parse_ignore_line(raw: str) -> tuple[str, bool, bool] | None:
    line = raw.rstrip("\r")
    if not line or line.startswith("#"):
        return None
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    if not line:
        return None
    if not anchored:
        line = "**/" + line
    return glob_to_regex(line, braces=False), negated, dir_only


def _alternation(rules: list[tuple[int, str]]) -> re.Pattern[str] | None:
    if not rules:
        return None
    return re.compile("|".join(f"(?P<r{i}>{rx})" for i, rx in reversed(rules)), re.DOTALL)


@dataclass(frozen=True)
class _Level:
    rules: IgnoreFile
    strip: int  # characters of the walk-relative path to drop...
    prefix: str  # ...and what to put before it, to get the path relative to the file's folder
    # rg 14.1.0 matches the rules of ignore files above the searched folder against
    # "<searched folder>/<entry name>", dropping the folders in between, so a parent's
    # `docs/*.md` hides docs/sub/b.md when docs is searched (but not when the root is).
    # Mirrored so that both engines list the same files; only rules with a '/' inside
    # are affected, and only below the first level of a searched subfolder.
    name_only: bool = False

    def match(self, rel: str, is_dir: bool) -> bool | None:
        if self.name_only:
            return self.rules.match(self.prefix + rel.rpartition("/")[2], is_dir)
        return self.rules.match(self.prefix + rel[self.strip:], is_dir)


def _read_ignore_file(path: str) -> IgnoreFile | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    rules = IgnoreFile(text)
    return rules if rules.keeps else None


def _ancestor_levels(root: str) -> tuple[tuple[_Level, ...], bool]:
    """Ignore files above ``root`` that apply inside it, and whether git rules apply."""
    folders: list[str] = []
    current = os.path.dirname(root)
    git_root: str | None = None
    while True:
        folders.append(current)
        if os.path.exists(os.path.join(current, ".git")):
            git_root = current
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if git_root is None:
        return (), False
    levels: list[_Level] = []
    for folder in folders:  # nearest first
        rules = _read_ignore_file(os.path.join(folder, ".gitignore"))
        if rules is not None:
            prefix = os.path.relpath(root, folder).replace(os.sep, "/") + "/"
            levels.append(_Level(rules, 0, prefix, name_only=True))
    return tuple(levels), True


@dataclass(frozen=True)
class WalkEntry:
    rel: str  # relative to the walk root, '/'-separated
    is_dir: bool
    is_symlink: bool = False


def walk(
    root: Path | str,
    *,
    include_dirs: bool = False,
    include_symlinks: bool = False,
    prune: Callable[[str, bool], bool] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[WalkEntry]:
    """Entries below ``root`` (not ``root`` itself) that the ignore rules keep.

    Ignored folders are never entered. ``prune(rel, is_dir)`` drops more entries.
    Order is unspecified; callers sort.
    """
    root_str = os.fspath(root)
    levels, git_active = _ancestor_levels(root_str)
    stack: list[tuple[str, str, tuple[_Level, ...], bool]] = [(root_str, "", levels, git_active)]
    while stack:
        if cancelled is not None and cancelled():
            return
        folder, folder_rel, levels, git_active = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        if ".git" in names and os.path.exists(os.path.join(folder, ".git")):
            levels, git_active = (), True  # a (nested) repository starts its own rules
        if git_active and ".gitignore" in names:
            rules = _read_ignore_file(os.path.join(folder, ".gitignore"))
            if rules is not None:
                strip = len(folder_rel) + 1 if folder_rel else 0
                levels = (_Level(rules, strip, ""), *levels)
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            rel = f"{folder_rel}/{name}" if folder_rel else name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                if not (is_link or is_dir or entry.is_file(follow_symlinks=False)):
                    continue  # sockets, fifos, devices
            except OSError:
                continue
            if is_link and not include_symlinks:
                continue
            ignored = None
            for level in levels:
                ignored = level.match(rel, is_dir)
                if ignored is not None:
                    break
            if ignored:
                continue
            if prune is not None and prune(rel, is_dir):
                continue
            if is_dir:
                if include_dirs:
                    yield WalkEntry(rel, True)
                stack.append((entry.path, rel, levels, git_active))
            else:
                yield WalkEntry(rel, False, is_link)


class IgnoreChecker:
    """Answers, for paths below ``root``, whether :func:`walk` would reach them.

    For results rg found with a ``--glob`` (which bypasses ignore rules): checking a few
    thousand paths costs less than rg spends applying ignore rules to a whole tree.
    """

    def __init__(self, root: Path | str) -> None:
        self._root = os.fspath(root)
        levels, git_active = _ancestor_levels(self._root)
        self._folders: dict[str, tuple[tuple[_Level, ...], bool]] = {}
        self._folders[""] = self._enter(self._root, "", levels, git_active)
        self._visible_folders: dict[str, bool] = {"": True}

    def _enter(self, folder: str, folder_rel: str, levels: tuple[_Level, ...],
               git_active: bool) -> tuple[tuple[_Level, ...], bool]:
        # os.access answers without raising, unlike a failed stat or open: this runs
        # for every folder holding a result.
        if os.access(folder + "/.git", os.F_OK):
            levels, git_active = (), True
        gitignore = folder + "/.gitignore"
        if git_active and os.access(gitignore, os.F_OK):
            rules = _read_ignore_file(gitignore)
            if rules is not None:
                strip = len(folder_rel) + 1 if folder_rel else 0
                levels = (_Level(rules, strip, ""), *levels)
        return levels, git_active

    def _rules_inside(self, folder_rel: str) -> tuple[tuple[_Level, ...], bool]:
        known = self._folders.get(folder_rel)
        if known is None:
            parent = folder_rel.rpartition("/")[0]
            levels, git_active = self._rules_inside(parent)
            known = self._enter(os.path.join(self._root, folder_rel), folder_rel, levels, git_active)
            self._folders[folder_rel] = known
        return known

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        levels, _ = self._rules_inside(rel.rpartition("/")[0])
        for level in levels:
            verdict = level.match(rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def _folder_visible(self, folder_rel: str) -> bool:
        known = self._visible_folders.get(folder_rel)
        if known is None:
            parent, _, name = folder_rel.rpartition("/")
            known = (name != ".git" and self._folder_visible(parent)
                     and not self._ignored(folder_rel, True))
            self._visible_folders[folder_rel] = known
        return known

    def visible(self, rel: str) -> bool:
        """Whether the file at ``rel`` (relative to root, '/'-separated) would be walked."""
        return self.visible_many([rel])[0]

    def visible_many(self, rels: list[str]) -> list[bool]:
        """:meth:`visible` for each path; quickest when paths of a folder are adjacent
        (sorted), since a folder's rules are looked up once per run of its files."""
        # This runs on every result of a search, so _Level.match is unrolled here:
        # per folder, the file rules that apply, as (regex, keeps, prefix, strip),
        # strip -1 meaning "match the file name only".
        verdicts: list[bool] = []
        last_folder: str | None = None
        folder_ok = False
        checks: list[tuple[re.Pattern[str], dict[str, bool], str, int]] = []
        for rel in rels:
            folder, _, name = rel.rpartition("/")
            if folder != last_folder:
                last_folder = folder
                folder_ok = self._folder_visible(folder)
                checks = []
                if folder_ok:
                    for level in self._rules_inside(folder)[0]:
                        if level.rules.for_files is not None:
                            checks.append((level.rules.for_files, level.rules.keeps, level.prefix,
                                           -1 if level.name_only else level.strip))
            verdict = folder_ok and name != ".git"
            if verdict:
                for rx, keeps, prefix, strip in checks:
                    m = rx.fullmatch(prefix + (name if strip < 0 else rel[strip:]))
                    if m is not None and m.lastgroup is not None:
                        verdict = keeps[m.lastgroup]
                        break
            verdicts.append(verdict)
        return verdicts


def walk_files(root: Path | str, cancelled: Callable[[], bool] | None = None) -> list[str]:
    """Every searchable file below ``root``, relative to it, sorted."""
    return sorted(e.rel for e in walk(root, cancelled=cancelled))


# --------------------------------------------------------------------------- rg

def find_rg() -> str | None:
    """The rg binary from the ripgrep wheel (the venv's scripts folder) or the PATH."""
    candidates = [
        Path(sys.executable).parent / "rg",
        Path(sysconfig.get_path("scripts")) / "rg",
        Path(sys.prefix) / "bin" / "rg",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


@dataclass(frozen=True)
class RgRun:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool  # stdout passed max_bytes and rg was stopped


# How often a running search's output size is checked against its cap.
OUTPUT_CHECK_INTERVAL = 0.05


class SearchCancelled(Exception):
    """The run was aborted while rg was searching."""


async def run_rg(
    rg: str,
    args: list[str],
    cwd: Path | str,
    cancel: CancelToken,
    max_bytes: int = 64 * 1024 * 1024,
    pass_fds: tuple[int, ...] = (),
) -> RgRun:
    """Run rg, keeping at most ``max_bytes`` of its output; killed on abort.

    rg writes into an unnamed temporary file rather than a pipe: a pipe wakes the
    event loop for each of the thousands of small writes rg makes (one per file),
    which cost more than the search itself on a large result. The file's size is
    watched so that a runaway search is still stopped early.
    """
    with tempfile.TemporaryFile(prefix="loom-rg-") as out:
        proc = await asyncio.create_subprocess_exec(
            rg, *args, cwd=os.fspath(cwd), pass_fds=pass_fds,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stderr is not None
        exited = asyncio.ensure_future(proc.wait())
        errors = asyncio.ensure_future(proc.stderr.read())
        aborted = asyncio.ensure_future(cancel.wait())
        truncated = False
        try:
            while not exited.done():
                await asyncio.wait({exited, aborted}, timeout=OUTPUT_CHECK_INTERVAL,
                                   return_when=asyncio.FIRST_COMPLETED)
                if aborted.done() and not exited.done():
                    raise SearchCancelled(cancel.reason)
                if not exited.done() and os.fstat(out.fileno()).st_size > max_bytes:
                    truncated = True
                    _kill(proc)
                    await exited
            stderr = await errors
            returncode = exited.result()
        except BaseException:
            _kill(proc)
            errors.cancel()
            await proc.wait()
            raise
        finally:
            aborted.cancel()
        out.seek(0)
        stdout = out.read(max_bytes + 1)
    truncated = truncated or len(stdout) > max_bytes
    return RgRun(returncode, stdout[:max_bytes] if truncated else stdout,
                 stderr.decode("utf-8", "replace"), truncated)


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def rg_path(raw: bytes) -> str:
    """A path as rg prints it, relative and without rg's ``./`` prefix.

    os.fsdecode, minus its Python-level overhead: this runs once per result."""
    return (raw[2:] if raw.startswith(b"./") else raw).decode(_FS_ENCODING, _FS_ERRORS)


def rg_paths(output: bytes) -> list[str]:
    """The NUL-separated paths of complete rg output, as :func:`rg_path` gives them.
    (Decoded in one piece: the split points are NULs, which no path contains.)"""
    text = output.decode(_FS_ENCODING, _FS_ERRORS)
    return [p[2:] if p.startswith("./") else p for p in text.split("\0") if p]


async def stream_rg_paths(
    rg: str,
    args: list[str],
    cwd: Path | str,
    cancel: CancelToken,
    consume: Callable[[list[str]], None],
    pass_fds: tuple[int, ...] = (),
) -> int:
    """Run rg printing NUL-separated paths, handing each batch to ``consume`` in a
    worker thread while rg is still walking, so that per-file work (a stat for each
    glob result) overlaps the walk. Returns rg's exit code; killed on abort."""
    proc = subprocess.Popen(
        [rg, *args], cwd=os.fspath(cwd), pass_fds=pass_fds,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    output = proc.stdout

    def pump() -> int:
        rest = b""
        while chunk := os.read(output.fileno(), 1 << 16):
            complete, _, rest = (rest + chunk).rpartition(b"\0")
            if complete:
                consume(rg_paths(complete))
        if rest:
            consume(rg_paths(rest))
        return proc.wait()

    pumping = asyncio.ensure_future(asyncio.to_thread(pump))
    aborted = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({pumping, aborted}, return_when=asyncio.FIRST_COMPLETED)
        if not pumping.done():
            raise SearchCancelled(cancel.reason)
    finally:
        aborted.cancel()
        if proc.poll() is None:
            proc.kill()  # which also ends the worker's read
        if not pumping.done():
            await asyncio.wait({pumping})  # never close the pipe under a reading thread
        output.close()
        proc.wait()  # reaps rg; immediate once it has exited or been killed
    return pumping.result()


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
