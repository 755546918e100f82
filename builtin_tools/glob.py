"""glob: files whose path matches a pattern, newest first."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from pydantic import BaseModel, Field

from loom_engine.permissions.targets import FileAccess, PermissionTarget
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

from ._walk import (
    RG_WALK_ARGS,
    IgnoreChecker,
    PathGlob,
    SearchCancelled,
    find_rg,
    rg_filter_args,
    run_rg,
    walk,
)

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


class GlobTool(BaseTool):
    name = "glob"
    description = (
        "Find files by name or path pattern (e.g. `**/*.py`, `src/**/*.{ts,tsx}`). Returns "
        "paths relative to the workspace root, most recently modified first, at most "
        f"{MAX_RESULTS}. Skips the .git folder and files ignored by .gitignore (a `path` "
        "inside an ignored folder is still listed). Use grep to search file contents."
    )
    input_model = GlobInput
    is_concurrency_safe = True
    is_read_only = True

    def __init__(self, rg_path: str | None = None, *, use_rg: bool = True) -> None:
        self.rg: str | None = (rg_path or find_rg()) if use_rg else None

    def permission_target(self, args: BaseModel, ctx: ToolContext) -> PermissionTarget | None:
        assert isinstance(args, GlobInput)
        return FileAccess(paths=(args.path,), write=False)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, GlobInput)
        root = ctx.workspace.resolve(args.path)
        pattern = args.pattern.strip()
        if not pattern:
            return ToolOutput("The pattern is empty; give a glob such as **/*.py.", is_error=True)
        root, pattern = _move_literal_prefix(root, pattern)
        if not root.exists():
            return ToolOutput(f"Path not found: {args.path}", is_error=True)
        if not root.is_dir():
            return ToolOutput(f"Not a folder: {args.path} (glob searches folders; use "
                              f"read_file to read a file).", is_error=True)
        try:
            glob = PathGlob.compile(pattern)
        except ValueError as exc:
            return ToolOutput(f"Invalid pattern: {exc}", is_error=True)
        try:
            found = await self.find(root, glob, ctx)
        except SearchCancelled:
            return ToolOutput("Search aborted.", is_error=True)
        if ctx.cancel.cancelled:
            return ToolOutput("Search aborted.", is_error=True)
        where = ctx.workspace.relative(root)
        if not found:
            return ToolOutput(f"No files match {args.pattern!r} in {where}.")
        shown = [rel if where == "." else f"{where}/{rel}" for rel in found[:MAX_RESULTS]]
        lines = [_printable(p) for p in shown]
        if len(found) > MAX_RESULTS:
            more = len(found) - MAX_RESULTS
            lines.append(f"[Showing the {MAX_RESULTS} newest of {len(found)} matching files; "
                         f"{more} more not shown. Use a more specific pattern or path.]")
        return ToolOutput("\n".join(lines))

    async def find(self, root: Path, glob: PathGlob, ctx: ToolContext) -> list[str]:
        """Matching files relative to ``root``, newest first (ties by path)."""
        if self.rg is not None:
            narrowing, recheck_ignored = rg_filter_args(glob)
            args = ["--files", *RG_WALK_ARGS, "--null", *narrowing, "--", "."]
            try:
                run = await run_rg(self.rg, args, root, ctx.cancel)
            except OSError:
                self.rg = None  # the binary cannot run here: use the walker from now on
            else:
                listed = [os.fsdecode(p) for p in run.stdout.split(b"\0") if p]
                listed = [p[2:] if p.startswith("./") else p for p in listed]
                return await asyncio.to_thread(_select, root, glob, listed, recheck_ignored)
        return await asyncio.to_thread(_walk_and_select, root, glob, lambda: ctx.cancel.cancelled)


def _walk_and_select(root: Path, glob: PathGlob, cancelled) -> list[str]:  # type: ignore[no-untyped-def]
    return _select(root, glob, [e.rel for e in walk(root, cancelled=cancelled)])


def _select(root: Path, glob: PathGlob, rels: list[str], recheck_ignored: bool = False) -> list[str]:
    matching = [rel for rel in rels if glob.matches(rel)]
    if recheck_ignored:  # rg's --glob let ignored files through
        checker = IgnoreChecker(root)
        matching = [rel for rel in matching if checker.visible(rel)]
    stamped: list[tuple[int, str]] = []
    # Relative to an open folder the kernel resolves only the path below it: the stat
    # of every match is most of glob's own cost.
    folder = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for rel in matching:
            try:
                mtime = os.stat(rel, dir_fd=folder, follow_symlinks=False).st_mtime_ns
            except OSError:
                continue  # deleted since it was listed
            stamped.append((-mtime, rel))
    finally:
        os.close(folder)
    stamped.sort()
    return [rel for _, rel in stamped]


def _move_literal_prefix(root: Path, pattern: str) -> tuple[Path, str]:
    """Absolute patterns and ones climbing with `..` become a folder plus the rest.

    Matching happens on paths below the folder, which contain neither, so
    `/repo/src/**/*.py` would otherwise match nothing. A leading `/` whose folder
    does not exist keeps its gitignore-style meaning: anchored at `path`.
    """
    parts = pattern.split("/")
    if not (pattern.startswith("/") or ".." in parts):
        return root, pattern
    base = Path("/") if pattern.startswith("/") else root
    literal: list[str] = []
    for part in parts[:-1]:
        if _GLOB_META.search(part):
            break
        literal.append(part)
    rest = parts[len(literal):]
    components = [p for p in literal if p]
    folder = Path(os.path.realpath(os.path.join(base, *components)))
    if pattern.startswith("/") and not (components and folder.is_dir()):
        return root, pattern  # `/a.py`: anchored to `path`, not the filesystem root
    # A leading '/' keeps the rest anchored at the folder even without another '/'.
    return folder, "/" + "/".join(rest)


def _printable(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
