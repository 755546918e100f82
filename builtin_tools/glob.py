"""glob: files whose path matches a pattern, newest first."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from loom_engine.permissions.targets import FileAccess, PermissionTarget
from loom_engine.tools.base import ToolContext, ToolError, ToolOutput

from ._files.globs import PathGlob
from ._files.ignore import IgnoreChecker
from ._files.paths import resolve_path
from ._files.rg import RG_WALK_ARGS, SearchCancelled, rg_filter_args, stream_rg_paths
from ._files.safe_io import open_folder, pinned_folder
from ._files.walk import walk
from ._search_tool import RgSearchTool, RuledOut, check_pattern

MAX_RESULTS = 200
_GLOB_META = re.compile(r"[*?\[{\\]")


class GlobInput(BaseModel):
    pattern: str = Field(description=(
        "Glob pattern. Without a `/` it matches file names at any depth (`*.py`, "
        "`test_*.py`); with a `/` it matches the path under `path` (`src/**/*.ts`, "
        "`**/tests/*.py`). `*` stays within one folder, `**` spans folders, "
        "`{a,b}` gives alternatives, `[abc]` one character."))
    path: str = Field(".", description=(
        "Folder to search, absolute or relative to the workspace root."))


class GlobTool(RgSearchTool[GlobInput]):
    name = "glob"
    description = (
        "Find files by name or path pattern (e.g. `**/*.py`, `src/**/*.{ts,tsx}`). Returns "
        "paths relative to the workspace root, most recently modified first, at most "
        f"{MAX_RESULTS}. Skips the .git folder and files ignored by .gitignore (a `path` "
        "inside an ignored folder is still listed). Use grep to search file contents."
    )
    input_model = GlobInput
    guidance = (
        'glob finds files by name ("**/*.py", "src/**/test_*.py"), newest first.')

    def permission_target(self, args: GlobInput, ctx: ToolContext) -> PermissionTarget | None:
        # A pattern such as `../other/*` or `/etc/*` searches the folder its fixed start
        # names, so that folder is checked along with `path`.
        searched, _ = search_root(ctx, args.path, args.pattern.strip())
        named = str(resolve_path(ctx, args.path))
        return FileAccess(paths=tuple(dict.fromkeys((named, str(searched)))), write=False)

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolOutput:
        pattern = args.pattern.strip()
        if not pattern:
            return ToolOutput("The pattern is empty; give a glob such as **/*.py.", is_error=True)
        try:
            root, pattern = search_root(ctx, args.path, pattern)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        # The folder may come from the pattern (`../other/*`): name the one that is missing.
        named = args.path if root == resolve_path(ctx, args.path) else ctx.workspace.relative(root)
        if not os.path.exists(root):
            return ToolOutput(f"Path not found: {named}", is_error=True)
        if not os.path.isdir(root):
            return ToolOutput(f"Not a folder: {named} (glob searches folders; use "
                              f"read_file to read a file).", is_error=True)
        try:
            glob = PathGlob.compile(pattern)
        except ValueError as exc:
            return ToolOutput(f"Invalid pattern: {exc}", is_error=True)
        try:
            found = await self.find(root, glob, ctx)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except SearchCancelled:
            return ToolOutput("Search aborted.", is_error=True)
        if ctx.cancel.cancelled:
            return ToolOutput("Search aborted.", is_error=True)
        ruled_out = RuledOut(ctx, self.name)
        if ruled_out.active:
            found = [rel for rel in found if ruled_out.keeps(root / rel)]
        note = ruled_out.counted_note()
        where = ctx.workspace.relative(root)
        if not found:
            return ToolOutput("\n".join([f"No files match {args.pattern!r} in {where}.", *([note] if note else [])]))
        shown = [rel if where == "." else f"{where}/{rel}" for rel in found[:MAX_RESULTS]]
        lines = [_printable(p) for p in shown]
        if len(found) > MAX_RESULTS:
            more = len(found) - MAX_RESULTS
            lines.append(f"[Showing the {MAX_RESULTS} newest of {len(found)} matching files; "
                         f"{more} more not shown. Use a more specific pattern or path.]")
        if note:
            lines.append(note)
        return ToolOutput("\n".join(lines))

    async def find(self, root: Path, glob: PathGlob, ctx: ToolContext) -> list[str]:
        """Matching files relative to ``root``, newest first (ties by path)."""
        if self.rg is not None:
            narrowing = rg_filter_args(glob)
            args = ["--files", *RG_WALK_ARGS, "--null", *narrowing.args, "--", "."]
            # rg and the stats start in the very folder that was checked (see pinned_folder).
            with pinned_folder(root, ctx.workspace.relative(root)) as (start, fds), \
                    _Selection(root, None if narrowing.exact else glob, recheck_ignored=narrowing.recheck_ignored,
                               opened=start) as selection:
                try:
                    await stream_rg_paths(self.rg, args, start, ctx.cancel, selection.add, pass_fds=fds)
                except OSError:
                    self.rg = None  # the binary cannot run here: use the walker from now on
                else:
                    return selection.newest_first()
        # The walker goes by path: it can only check that no folder became a symlink so far.
        try:
            with open_folder(root, ctx.workspace.relative(root), "search"):
                pass
        except OSError as error:
            raise ToolError(f"Cannot search {ctx.workspace.relative(root)}: {error.strerror or error}.") from None
        return await asyncio.to_thread(_walk_and_select, root, glob, lambda: ctx.cancel.cancelled)


def _walk_and_select(root: Path, glob: PathGlob, cancelled: Callable[[], bool]) -> list[str]:
    with _Selection(root, glob) as selection:
        selection.add([e.rel for e in walk(root, cancelled=cancelled)])
        return selection.newest_first()


class _Selection:
    """Listed files that match the glob, with their modification times.

    Files arrive in batches as rg lists them: the stat of every match is most of
    glob's own cost, and it overlaps rg's walk this way.
    """

    def __init__(self, root: Path, glob: PathGlob | None, *, recheck_ignored: bool = False,
                 opened: str | None = None) -> None:
        self._glob = glob  # None: every file listed matches
        # rg's --glob lets ignored files through; they are checked again here.
        self._checker = IgnoreChecker(root) if recheck_ignored else None
        # Relative to an open folder the kernel resolves only the path below it.
        self._folder = os.open(opened or root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self._stamped: list[tuple[int, str]] = []

    def __enter__(self) -> _Selection:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._folder)

    def add(self, rels: list[str]) -> None:
        glob = self._glob
        matching = rels if glob is None else [rel for rel in rels if glob.matches(rel)]
        if self._checker is not None:
            matching.sort()  # a folder's files side by side: its rules are looked up once
            verdicts = self._checker.visible_many(matching)
            matching = [rel for rel, visible in zip(matching, verdicts, strict=False) if visible]
        for rel in matching:
            try:
                mtime = os.stat(rel, dir_fd=self._folder, follow_symlinks=False).st_mtime_ns
            except OSError:
                continue  # deleted since it was listed
            self._stamped.append((-mtime, rel))

    def newest_first(self) -> list[str]:
        self._stamped.sort()
        return [rel for _, rel in self._stamped]


def search_root(ctx: ToolContext, path: str, pattern: str) -> tuple[Path, str]:
    """The folder a glob call searches and the pattern left to match below it.

    Absolute patterns and ones climbing with `..` become a folder plus the rest:
    matching happens on paths below the folder, which contain neither, so
    `/repo/src/**/*.py` would otherwise match nothing. A leading `/` whose folder
    does not exist keeps its gitignore-style meaning: anchored at `path`. The folder
    is worked out once per call, so the one the permission check saw is the one walked.
    """
    check_pattern(pattern)
    root = resolve_path(ctx, path)
    split = _literal_split(pattern)
    if split is None:
        return root, pattern
    components, rest = split
    key = f"\0glob:{path}\0{pattern}"
    folder = ctx.resolved_paths.get(key)
    if folder is None:
        base = Path("/") if pattern.startswith("/") else root
        folder = Path(os.path.realpath(os.path.join(base, *components)))
        if pattern.startswith("/") and not (components and os.path.isdir(folder)):
            folder = root
            ctx.resolved_paths[key + "\0anchored"] = root
        ctx.resolved_paths[key] = folder
    if key + "\0anchored" in ctx.resolved_paths:
        return root, pattern  # `/a.py`: anchored to `path`, not the filesystem root
    return folder, rest


def _literal_split(pattern: str) -> tuple[list[str], str] | None:
    """The fixed folder components an absolute or `..` pattern starts with, and the rest
    (which starts with '/', keeping it anchored at that folder); None for other patterns."""
    parts = pattern.split("/")
    if not (pattern.startswith("/") or ".." in parts):
        return None
    literal: list[str] = []
    for part in parts[:-1]:
        if _GLOB_META.search(part):
            break
        literal.append(part)
    return [p for p in literal if p], "/" + "/".join(parts[len(literal):])


def _printable(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
