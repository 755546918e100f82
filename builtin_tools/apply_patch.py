"""apply_patch: the ``*** Begin Patch`` format used by OpenAI's Codex models.

A patch is parsed completely, then applied to an in-memory view of the files; only
when every hunk of every file has applied does anything reach the disk, so a patch
either lands whole or not at all (Codex itself keeps the files it changed before a
failing hunk; Loom does not).

Where this implementation chooses differently from Codex, on purpose:

* all or nothing, as above, with a rollback should the disk fail half-way through;
* context lines are kept as the file has them: a context line that matched only after
  ignoring whitespace or typographic punctuation is not rewritten with the patch's text;
* a hunk of only ``+`` lines under an ``@@ context`` header is inserted right after that
  context line (without a header it is appended at the end of the file, as in Codex);
* a hunk whose lines are not found after the previous hunk is looked for from the top of
  the file as well (hunks out of order), and overlapping hunks are refused;
* a unified-diff range header (``@@ -3,4 +3,5 @@``) counts as a header without context.

The steps live apart: ``_patch_format`` parses, ``_patch_plan`` matches and plans in
memory, ``_patch_commit`` writes; this module is the tool and ``apply_patch_text``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput

from ._files.paths import resolve_entry, resolve_path
from ._files.text import unread_overwrite_message
from ._patch_commit import CommitFailed, commit_files
from ._patch_format import DeleteFile, PatchApplyError, PatchError, UpdateFile, parse_patch
from ._patch_plan import PatchPlan, plan_patch

# ----------------------------------------------------------------------------- committing

def commit_plan(plan: PatchPlan) -> None:
    """Write the plan to disk; on an error, put back everything already changed."""
    try:
        commit_files(plan.final)
    except CommitFailed as error:
        raise PatchApplyError(str(error)) from None


def apply_patch_text(patch: str, cwd: Path) -> str:
    """Apply ``patch`` with paths relative to ``cwd``; returns the summary, raises PatchError."""
    base = Path(os.path.realpath(cwd))

    def resolve(path: str) -> Path:
        raw = os.path.expanduser(path)
        return Path(os.path.realpath(raw if os.path.isabs(raw) else base / raw))

    def resolve_link(path: str) -> Path:
        folder, name = os.path.split(path)
        return resolve(path) if name in ("", ".", "..") else resolve(folder or ".") / name

    plan = plan_patch(parse_patch(patch), resolve, resolve_link=resolve_link)
    commit_plan(plan)
    return plan.summary()


# ----------------------------------------------------------------------------- the tool

class ApplyPatchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    patch: str = Field(description="The whole patch, from '*** Begin Patch' to '*** End Patch'.")


class ApplyPatchTool(BaseTool[ApplyPatchInput]):
    name = "apply_patch"
    description = (
        "Apply a patch in the '*** Begin Patch' format to one or more files; paths are relative to the "
        "workspace root (or absolute). Between '*** Begin Patch' and '*** End Patch' come file "
        "sections: '*** Add File: <path>' followed by the content with every line prefixed by '+'; "
        "'*** Delete File: <path>'; '*** Update File: <path>', optionally '*** Move to: <new path>', then "
        "hunks that each start with '@@' (or '@@ <a line just above the change, such as a def or class "
        "line>') followed by lines prefixed ' ' (unchanged context), '-' (removed) or '+' (added). Give "
        "about 3 lines of context around each change; end a hunk at the file's end with "
        "'*** End of File'. The patch applies entirely or not at all; an error names the hunk that "
        "did not match.")
    input_model = ApplyPatchInput
    guidance = (
        "apply_patch takes one patch:\n"
        "*** Begin Patch\n"
        "*** Update File: src/app.py\n"
        "@@ def greet(name):\n"
        '-    return f"hello {name}"\n'
        '+    return f"Hello, {name}!"\n'
        "*** Add File: src/extra.py\n"
        '+print("new file")\n'
        "*** Delete File: src/old.py\n"
        "*** End Patch\n"
        "In an Update File hunk each line starts with a space (context), - (remove) or + "
        "(add). Give about three lines of context around each change and an @@ line "
        "naming the enclosing function or class when the context alone is ambiguous. "
        'Every line of an Add File starts with +. "*** Move to: new/path" right after an '
        "Update File line renames the file. The patch applies completely or not at all.")
    writes_files = True

    def permission_target(self, args: ApplyPatchInput, ctx: ToolContext) -> FileAccess:
        try:
            hunks = parse_patch(args.patch)
        except PatchError:
            # Nothing can be written: run() reports the parse error.
            return FileAccess(paths=(), write=True)
        paths: list[str] = []
        for hunk in hunks:
            for name in (hunk.path, hunk.move_path if isinstance(hunk, UpdateFile) else None):
                if name is not None:
                    # A deleted symlink is the link itself; the check still resolves it, and
                    # so judges the stricter of the link and its target.
                    place = resolve_entry(ctx, name) if isinstance(hunk, DeleteFile) else resolve_path(ctx, name)
                    if str(place) not in paths:
                        paths.append(str(place))
        return FileAccess(paths=tuple(paths), write=True)

    async def preview(self, args: ApplyPatchInput, ctx: ToolContext) -> Mapping[str, Any] | None:
        try:
            plan = await asyncio.to_thread(_plan, args.patch, ctx)
        except PatchError as error:
            # A patch that cannot apply fails before anyone is asked about it, with the
            # same message run() would give.
            raise ToolError(f"apply_patch failed. {error}\nNo files were changed.") from None
        return _display(plan)

    async def run(self, args: ApplyPatchInput, ctx: ToolContext) -> ToolOutput:

        def work() -> ToolOutput:
            plan = _plan(args.patch, ctx)
            commit_plan(plan)
            for path, state in plan.final.items():
                if state is None:
                    ctx.state.read_files.pop(str(path), None)
                elif path in plan.added or ctx.state.was_read(path):
                    # The model knows what it wrote; its next edit needs no re-read.
                    ctx.state.record_read(path)
            return ToolOutput(plan.summary().rstrip("\n"), display=_display(plan))

        try:
            return await asyncio.to_thread(work)
        except (PatchError, ToolError) as error:
            return ToolOutput(f"apply_patch failed. {error}\nNo files were changed.", is_error=True)
        except OSError as error:
            return ToolOutput(f"apply_patch failed: {error.strerror or error}. No files were changed.",
                              is_error=True)


def _plan(patch: str, ctx: ToolContext) -> PatchPlan:
    def check_overwrite(path: Path, written: str) -> None:
        # As write_file: a file the model never saw is not replaced by accident.
        if not ctx.state.was_read(path):
            raise PatchApplyError(f"Failed to add {written}: {unread_overwrite_message(written)}")
        if ctx.state.changed_since_read(path):
            raise PatchApplyError(f"Failed to add {written}: it has changed on disk since you last read it. "
                                  "Call read_file again first.")

    return plan_patch(parse_patch(patch), lambda name: resolve_path(ctx, name),
                      resolve_link=lambda name: resolve_entry(ctx, name), check_overwrite=check_overwrite)


def _display(plan: PatchPlan) -> dict[str, Any]:
    paths = list(dict.fromkeys(change.path for change in plan.changes))
    label = paths[0] if len(paths) == 1 else f"{len(paths)} files"
    return {"kind": "diff", "path": label, "diff": plan.diff}
