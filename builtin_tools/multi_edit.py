"""multi_edit: several exact-string edits to one file, applied in order, all or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

from ._files.paths import resolve_path
from .edit_file import Edit, preview_edits, run_edits


class EditOperation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old_string: str = Field(description="Exact text to replace, as the file reads after the edits before "
                                        "this one; whitespace and indentation must match.")
    new_string: str = Field(description="Text to put in its place (must differ from old_string).")
    replace_all: bool = Field(False, description="Replace every occurrence; otherwise old_string must "
                                                 "occur exactly once.")


class MultiEditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path of the file: absolute, or relative to the workspace root.")
    edits: list[EditOperation] = Field(min_length=1, description="Edits applied one after another, each "
                                                                  "to the result of the previous one.")


class MultiEditTool(BaseTool[MultiEditInput]):
    name = "multi_edit"
    description = (
        "Make several exact-string replacements in one text file in a single call. Edits apply in "
        "order, each to the text the previous ones produced, and either all succeed or the file is "
        "left untouched (the error names the edit that failed). Same rules as edit_file for each edit: "
        "the file must have been read with read_file and not changed since; old_string must match "
        "exactly and be unique unless replace_all is true. An edit may not change text an earlier "
        "edit in the same call wrote (its old_string inside an earlier new_string): fold it into that edit.")
    input_model = MultiEditInput
    guidance = (
        "multi_edit applies several edits to one file in order, all or nothing; each "
        "old_string must match the file as the edits before it left it.")
    writes_files = True

    def permission_target(self, args: MultiEditInput, ctx: ToolContext) -> FileAccess:
        return FileAccess(paths=(str(resolve_path(ctx, args.path)),), write=True)

    async def preview(self, args: MultiEditInput, ctx: ToolContext) -> Mapping[str, Any] | None:
        return await preview_edits(ctx, args.path, _edits_of(args))

    async def run(self, args: MultiEditInput, ctx: ToolContext) -> ToolOutput:
        return await run_edits(ctx, args.path, _edits_of(args))


def _edits_of(args: MultiEditInput) -> list[Edit]:
    return [Edit(e.old_string, e.new_string, e.replace_all) for e in args.edits]
