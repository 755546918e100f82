"""write_file: create a file, or replace one the model has read, atomically."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput

from ._files.access import LOCAL_FILES, BlockingFiles, blocking_files
from ._files.diff import diff_labels, unified_diff
from ._files.paths import resolve_path
from ._files.text import (
    UTF8,
    TextFileError,
    atomic_write,
    count_lines,
    lines_phrase,
    load_text,
    regular_file_stat,
    unread_overwrite_message,
    write_error,
)


class WriteFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path of the file: absolute, or relative to the workspace root. Missing "
                                  "parent folders are created.")
    content: str = Field(description="The complete new content of the file.")


@dataclass(frozen=True)
class PlannedWrite:
    resolved: Path
    shown: str
    before: str | None  # None when the file does not exist yet
    after: str
    data: bytes
    mode: int | None

    def display(self) -> dict[str, Any]:
        old_label, new_label = diff_labels(self.shown, created=self.before is None)
        return {"kind": "diff", "path": self.shown,
                "diff": unified_diff(self.before or "", self.after, old_label, new_label)}


def plan_write(ctx: ToolContext, path: str, content: str, files: BlockingFiles = LOCAL_FILES) -> PlannedWrite:
    resolved = resolve_path(ctx, path)
    shown = ctx.workspace.relative(resolved)
    if not resolved.exists():
        return PlannedWrite(resolved, shown, None, content, UTF8.encode(content), None)
    regular_file_stat(resolved, shown)
    if not ctx.state.was_read(resolved):
        raise TextFileError(unread_overwrite_message(shown))
    if ctx.state.changed_since_read(resolved):
        raise TextFileError(
            f"{shown} has changed on disk since you last read it (the user or another process modified "
            "it). Call read_file again, then write the file taking those changes into account.")
    existing = load_text(resolved, shown, files)
    after = content
    # A model writes "\n"; a CRLF file stays CRLF unless the content chose its own endings.
    if existing.newline == "\r\n" and "\r" not in content:
        after = content.replace("\n", "\r\n")
    return PlannedWrite(resolved, shown, existing.text, after, existing.encode(after), existing.mode)


class WriteFileTool(BaseTool[WriteFileInput]):
    name = "write_file"
    description = (
        "Write a text file with the given complete content, creating missing parent folders. An "
        "existing file can only be overwritten after it has been read with read_file in this session "
        "(and not changed since); its line endings, encoding and permissions are kept. Prefer edit_file "
        "or multi_edit for changes to part of an existing file.")
    input_model = WriteFileInput
    guidance = (
        "write_file creates a file or replaces one completely; prefer edit_file for "
        "changes to an existing file.")
    writes_files = True

    def permission_target(self, args: WriteFileInput, ctx: ToolContext) -> FileAccess:
        return FileAccess(paths=(str(resolve_path(ctx, args.path)),), write=True)

    async def preview(self, args: WriteFileInput, ctx: ToolContext) -> Mapping[str, Any] | None:
        plan = await asyncio.to_thread(plan_write, ctx, args.path, args.content, blocking_files(ctx))
        return plan.display()

    async def run(self, args: WriteFileInput, ctx: ToolContext) -> ToolOutput:
        files = blocking_files(ctx)

        def work() -> ToolOutput:
            plan = plan_write(ctx, args.path, args.content, files)
            try:
                atomic_write(plan.resolved, plan.data, plan.mode, plan.shown, files)
            except OSError as error:
                raise write_error(plan.shown, error) from None
            ctx.state.record_read(plan.resolved)
            verb = "Created" if plan.before is None else "Overwrote"
            return ToolOutput(f"{verb} {plan.shown} ({lines_phrase(count_lines(plan.after))}).",
                              display=plan.display())

        try:
            return await asyncio.to_thread(work)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except OSError as error:
            return ToolOutput(f"Could not write {args.path}: {error.strerror or error}.", is_error=True)
