"""ls: a folder as an indented tree, without what .gitignore hides."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pathspec
from pydantic import BaseModel, Field

from loom_engine.tools.base import ToolContext, ToolError, ToolOutput

from ._files.paths import resolve_path
from ._files.safe_io import open_folder
from ._files.walk import walk
from ._search_tool import FolderReadTool, RuledOut

MAX_ENTRIES = 1000
# Counting stops here: `ls /` should answer, not walk the whole disk.
MAX_SCANNED = 50_000
_INDENT = "  "


class LsInput(BaseModel):
    path: str = Field(".", description=(
        "Folder to list, absolute or relative to the workspace root."))
    ignore: list[str] = Field(default_factory=list, description=(
        "Extra gitignore-style patterns to hide, e.g. [\"node_modules\", \"*.pyc\", \"dist/\"]."))


@dataclass(frozen=True)
class _Node:
    name: str
    rel: str
    is_dir: bool
    link_target: str | None = None


class LsTool(FolderReadTool[LsInput]):
    name = "ls"
    description = (
        "List a folder as a tree (folders end with '/', symlinks show their target). Hides "
        "the .git folder, files ignored by .gitignore and the `ignore` patterns. Shows at most "
        f"{MAX_ENTRIES} entries, cutting the deepest levels first. Prefer glob to find files "
        "by pattern and grep to search contents."
    )
    input_model = LsInput
    guidance = (
        "ls shows a folder as a tree (gitignored entries hidden).")

    async def run(self, args: LsInput, ctx: ToolContext) -> ToolOutput:
        try:
            root = resolve_path(ctx, args.path)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        if not root.exists():
            return ToolOutput(f"Path not found: {args.path}", is_error=True)
        if not root.is_dir():
            return ToolOutput(f"Not a folder: {args.path} (use read_file to read a file).",
                              is_error=True)
        patterns = [p for p in args.ignore if p.strip()]
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None
        except ValueError as exc:
            return ToolOutput(f"Invalid ignore pattern: {exc}", is_error=True)
        where = ctx.workspace.relative(root)
        header = "./" if where == "." else f"{where}/"
        try:
            # The walk goes by path: at least no folder of it became a symlink since the check.
            with open_folder(root, where, "list"):
                pass
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except OSError as error:
            return ToolOutput(f"Cannot list {where}: {error.strerror or error}.", is_error=True)
        text = await asyncio.to_thread(render_tree, root, header, spec,
                                       lambda: ctx.cancel.cancelled, ruled_out=RuledOut(ctx, self.name))
        if ctx.cancel.cancelled:
            return ToolOutput("Listing aborted.", is_error=True)
        return ToolOutput(text)


def render_tree(root: Path, header: str, spec: pathspec.PathSpec[pathspec.Pattern] | None,
                cancelled: Callable[[], bool] = lambda: False,
                max_entries: int = MAX_ENTRIES, max_scanned: int = MAX_SCANNED,
                ruled_out: RuledOut | None = None) -> str:
    def prune(rel: str, is_dir: bool) -> bool:
        if spec is not None and spec.match_file(rel + "/" if is_dir else rel):
            return True
        # A folder a rule covers is not entered: nothing in it is listed.
        return ruled_out is not None and not ruled_out.keeps(root / rel)
    children: dict[str, list[_Node]] = {}
    total = 0
    for entry in walk(root, include_dirs=True, include_symlinks=True, prune=prune,
                      cancelled=cancelled):
        parent, _, name = entry.rel.rpartition("/")
        target = None
        if entry.is_symlink:
            try:
                target = os.readlink(root / entry.rel)
            except OSError:
                target = "?"
            # The target is shown too: a link into a folder no search may show is left out.
            if ruled_out is not None and ruled_out.active \
                    and not ruled_out.keeps(Path(os.path.realpath(root / entry.rel))):
                continue
        children.setdefault(parent, []).append(_Node(name, entry.rel, entry.is_dir, target))
        total += 1
        if total >= max_scanned:
            break
    for nodes in children.values():
        nodes.sort(key=lambda n: (not n.is_dir, n.name.casefold(), n.name))
    note = ruled_out.counted_note() if ruled_out is not None else None
    if total == 0:
        return "\n".join([header, "(empty folder)", *([note] if note else [])])

    # Breadth first, so a cut keeps the upper levels whole and trims the deepest ones.
    included: set[str] = set()
    level = [""]
    while level and len(included) < max_entries:
        next_level: list[str] = []
        for folder in level:
            for node in children.get(folder, ()):
                if len(included) >= max_entries:
                    break
                included.add(node.rel)
                if node.is_dir:
                    next_level.append(node.rel)
        level = next_level

    lines = [header]

    def emit(folder: str, depth: int) -> None:
        nodes = children.get(folder, [])
        hidden = 0
        for node in nodes:
            if node.rel not in included:
                hidden += 1
                continue
            pad = _INDENT * depth
            if node.link_target is not None:
                lines.append(f"{pad}{_printable(node.name)} -> {_printable(node.link_target)}")
            elif node.is_dir:
                lines.append(f"{pad}{_printable(node.name)}/")
                emit(node.rel, depth + 1)
            else:
                lines.append(f"{pad}{_printable(node.name)}")
        if hidden:
            lines.append(f"{_INDENT * depth}… {hidden} more")

    emit("", 1)
    if total > len(included):
        counted = f"{total:,}+" if total >= max_scanned else str(total)
        lines.append(f"[Showing {len(included)} of {counted} entries; deeper levels were cut. "
                     f"List a subfolder or add ignore patterns to see more.]")
    if note:
        lines.append(note)
    return "\n".join(lines)


def _printable(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
