"""edit_file: replace an exact string in a file the model has read.

The planning code here is shared with multi_edit: both resolve the path, check that
the file was read and is unchanged, apply their edits in memory and only then write.
"""

from __future__ import annotations

import asyncio
import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput

from ._files.access import LOCAL_FILES, BlockingFiles, blocking_files
from ._files.diff import changed_regions, diff_labels, snippet, unified_diff
from ._files.edit_match import fold_quotes, has_quotes, whole_line_span, with_file_quotes
from ._files.near_match import find_near_match
from ._files.paths import resolve_path
from ._files.text import (
    UTF8,
    TextFile,
    atomic_write,
    count_lines,
    lines_phrase,
    load_text,
    missing_file_message,
    normalize_newlines,
    regular_file_stat,
    write_error,
)


class EditError(ToolError):
    """An edit that cannot be applied; the message tells the model how to fix its call."""


@dataclass(frozen=True)
class Edit:
    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass(frozen=True)
class PlannedEdit:
    """Everything an edit will do, worked out in memory before anything is written."""

    resolved: Path
    shown: str
    before: str
    after: str
    data: bytes  # ``after`` encoded the way the file was
    file: TextFile | None  # None when the edit creates the file
    replacements: int
    quotes_folded: bool = False  # some old_string matched only with curly quotes read as straight

    @property
    def created(self) -> bool:
        return self.file is None

    def display(self) -> dict[str, Any]:
        old_label, new_label = diff_labels(self.shown, created=self.created)
        return {"kind": "diff", "path": self.shown,
                "diff": unified_diff(self.before, self.after, old_label, new_label)}


_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)
_MAX_LISTED_LINES = 20


def apply_edit(text: str, newline: str, edit: Edit, shown: str) -> tuple[str, int]:
    """``text`` with ``edit`` applied, and how many places changed."""
    after, count, _ = apply_edit_noted(text, newline, edit, shown)
    return after, count


def apply_edit_noted(text: str, newline: str, edit: Edit, shown: str) -> tuple[str, int, bool]:
    """``text`` with ``edit`` applied, how many places changed, and whether quotes were folded.

    When the model sends ``\\n`` line breaks and the file has ``\\r\\n`` ones, matching
    happens on a copy with ``\\r\\n`` folded to ``\\n``; matched spans are mapped back
    to the original text, so every byte outside them stays exactly as it was.

    An exact match always wins. Only when there is none is old_string looked for with
    curly quotes folded to straight ones, and the new text then keeps the file's quote
    style (``with_file_quotes``). An empty new_string that removes whole lines removes
    their line break too (``whole_line_span``).
    """
    old, new = edit.old_string, edit.new_string
    if old == new:
        raise EditError("old_string and new_string are identical, so the edit would change nothing. "
                        "Put the replacement text in new_string.")
    if old == "":
        if text == "":
            return _file_newlines(new, newline), 1, False
        raise EditError(
            f"old_string is empty but {shown} is not. Put the existing text to replace in old_string "
            "(to insert, include a neighbouring line and repeat it in new_string); to replace the whole "
            "file use write_file.")
    if "\r" not in old and "\r\n" in text:
        work = text.replace("\r\n", "\n")
        folded = _folded_cr_positions(text)

        def to_raw(position: int) -> int:
            return position + bisect_left(folded, position)
    else:
        work = text

        def to_raw(position: int) -> int:
            return position

    starts = _find_all(work, old)
    quoted = False
    if not starts and has_quotes(old):
        starts = _find_all(fold_quotes(work), fold_quotes(old))
        quoted = bool(starts)
    if not starts:
        raise EditError(_not_found_message(work, old, shown))
    if len(starts) > 1 and not edit.replace_all:
        lines = _line_numbers(work, starts)
        listed = ", ".join(map(str, lines[:_MAX_LISTED_LINES])) + (", ..." if len(lines) > _MAX_LISTED_LINES else "")
        how = " (straight and curly quotes counted as the same)" if quoted else ""
        raise EditError(
            f"old_string occurs {len(starts)} times in {shown}{how} (at lines {listed}). Include more of the "
            f"surrounding text in old_string so that it matches exactly one place, or set replace_all "
            f"to true to replace all {len(starts)}.")
    pieces: list[str] = []
    previous = lower = 0  # the end of the last replaced span: in ``text``, in ``work``
    for index, start in enumerate(starts):
        end = start + len(old)
        replacement = new
        if quoted:
            replacement = with_file_quotes(new, work[start:end], work[start - 1:start])
        if new == "":
            upper = starts[index + 1] if index + 1 < len(starts) else len(work)
            start, end = whole_line_span(work, start, end, lower, upper)
        raw_start, raw_end = to_raw(start), to_raw(end)
        pieces.append(text[previous:raw_start])
        pieces.append(_file_newlines(replacement, newline))
        previous, lower = raw_end, end
    pieces.append(text[previous:])
    return "".join(pieces), len(starts), quoted


def _file_newlines(text: str, newline: str) -> str:
    """New text with the file's line breaks (the model may send either style)."""
    return normalize_newlines(text).replace("\n", "\r\n") if newline == "\r\n" else text


def _folded_cr_positions(text: str) -> list[int]:
    """Where each ``\\r\\n`` of ``text`` ends up, as the index of its ``\\n`` once folded."""
    positions: list[int] = []
    raw = text.find("\r\n")
    while raw >= 0:
        positions.append(raw - len(positions))
        raw = text.find("\r\n", raw + 2)
    return positions


def _find_all(haystack: str, needle: str) -> list[int]:
    # Non-overlapping, left to right: the places str.replace would change.
    starts: list[int] = []
    index = haystack.find(needle)
    while index >= 0:
        starts.append(index)
        index = haystack.find(needle, index + len(needle))
    return starts


def _line_numbers(text: str, offsets: Sequence[int]) -> list[int]:
    numbers: list[int] = []
    line, previous = 1, 0
    for offset in offsets:
        line += text.count("\n", previous, offset)
        previous = offset
        numbers.append(line)
    return numbers


def _not_found_message(work: str, old: str, shown: str) -> str:
    message = f"old_string was not found in {shown}."
    old_lines = [line for line in old.split("\n") if line.strip()]
    if old_lines and all(_LINE_NUMBER_PREFIX.match(line) for line in old_lines):
        message += (" It seems to include the line-number prefixes that read_file shows; old_string "
                    "must hold only the file's own text (what comes after the tab).")
    near = find_near_match(work, old)
    if near is None:
        return message + (" Nothing similar was found either. Call read_file to see the file's current "
                          "content and copy the exact text into old_string.")
    if near.whitespace_only:
        return message + (f" Text that differs only in whitespace (indentation, tabs or spaces) starts at "
                          f"line {near.line}:\n{near.render()}\nCopy it exactly, whitespace included, "
                          "and call again.")
    return message + (f" The most similar text starts at line {near.line}:\n{near.render()}\nIf that is "
                      "the place you meant, copy its text exactly into old_string and call again; "
                      "otherwise call read_file to see the file's current content.")


def edit_of_own_text(edits: Sequence[Edit]) -> tuple[int, int] | None:
    """(later, earlier), 1-based: the first edit whose old_string lies inside an earlier
    edit's new_string; None when there is none. Such an edit would change what the call
    itself wrote, not the file the model read, as Claude Code also refuses."""
    for later, edit in enumerate(edits, start=1):
        if not edit.old_string:
            continue
        for earlier, before in enumerate(edits[:later - 1], start=1):
            # A first edit with an empty old_string creates the file: all of it is the
            # call's text, and the edits after it are meant to shape it.
            if before.old_string and edit.old_string in before.new_string:
                return later, earlier
    return None


def plan_edits(ctx: ToolContext, path: str, edits: Sequence[Edit], files: BlockingFiles = LOCAL_FILES) -> PlannedEdit:
    """Check the read record, load the file and apply ``edits`` in order, in memory.

    All or nothing: any edit that cannot be applied raises, naming which one when
    there are several, and nothing is written.
    """
    resolved = resolve_path(ctx, path)
    shown = ctx.workspace.relative(resolved)
    several = len(edits) > 1
    overlap = edit_of_own_text(edits)
    if overlap is not None:
        later, earlier = overlap
        raise EditError(f"Edit {later} of {len(edits)} failed: its old_string lies inside the new_string of edit "
                        f"{earlier}, so it would edit text this call itself writes. Each edit must change "
                        f"text the file has now: fold that change into edit {earlier}'s new_string. No edits "
                        "were applied; fix the list and send it again.")
    if not resolved.exists() and not resolved.is_symlink():
        if edits and edits[0].old_string == "":
            # An empty old_string on a missing file creates it, as its first edit.
            text, file = "", None
        else:
            raise EditError(missing_file_message(resolved, shown) + " edit_file and multi_edit change existing "
                            "files; create a new one with write_file (or an edit whose old_string is empty).")
    else:
        regular_file_stat(resolved, shown)
        if not ctx.state.was_read(resolved):
            raise EditError(f"{shown} has not been read in this session. Call read_file on it first, then "
                            "retry the edit with text copied from what it shows.")
        if ctx.state.changed_since_read(resolved):
            raise EditError(f"{shown} has changed on disk since you last read it (the user or another "
                            "process modified it). Call read_file again and redo the edit against its "
                            "current content.")
        file = load_text(resolved, shown, files)
        text = file.text
    newline = file.newline if file is not None else "\n"
    after = text
    total = 0
    quotes_folded = False
    for number, edit in enumerate(edits, start=1):
        try:
            after, count, folded = apply_edit_noted(after, newline, edit, shown)
        except EditError as error:
            if not several:
                raise
            hint = (" Edits apply in order, so an earlier edit in this call may have changed that text."
                    if number > 1 and "was not found" in str(error) else "")
            raise EditError(f"Edit {number} of {len(edits)} failed: {error}{hint} No edits were applied; "
                            "fix that edit and send the whole list again.") from None
        total += count
        quotes_folded = quotes_folded or folded
    if file is not None and after == text:
        raise EditError(f"The edit would leave {shown} exactly as it is (old and new text differ only in line "
                        "endings or quote marks, which follow the file's style, or later edits undo earlier "
                        "ones). Nothing was written.")
    data = (file.encoding if file is not None else UTF8).encode(after)
    return PlannedEdit(resolved, shown, text, after, data, file, total, quotes_folded)


def commit_edit(plan: PlannedEdit, ctx: ToolContext, files: BlockingFiles = LOCAL_FILES) -> None:
    mode = plan.file.mode if plan.file is not None else None
    try:
        atomic_write(plan.resolved, plan.data, mode, plan.shown, files)
    except OSError as error:
        raise write_error(plan.shown, error) from None
    # The model now knows the content, so consecutive edits need no re-read.
    ctx.state.record_read(plan.resolved)


def edit_report(plan: PlannedEdit) -> ToolOutput:
    if plan.created:
        content = f"Created {plan.shown} ({lines_phrase(count_lines(plan.after))})."
    else:
        places = f"{plan.replacements} replacement{'s' if plan.replacements != 1 else ''}"
        if plan.quotes_folded:
            places += "; matched with straight and curly quotes taken as the same, keeping the file's quotes"
        content = (f"Edited {plan.shown} ({places}). The changed region now reads:\n"
                   f"{snippet(plan.after, changed_regions(plan.before, plan.after))}")
    return ToolOutput(content, display=plan.display())


async def run_edits(ctx: ToolContext, path: str, edits: Sequence[Edit]) -> ToolOutput:
    files = blocking_files(ctx)

    def work() -> ToolOutput:
        plan = plan_edits(ctx, path, edits, files)
        commit_edit(plan, ctx, files)
        return edit_report(plan)

    try:
        return await asyncio.to_thread(work)
    except ToolError as error:
        return ToolOutput(str(error), is_error=True)
    except OSError as error:
        return ToolOutput(f"Could not edit {path}: {error.strerror or error}.", is_error=True)


async def preview_edits(ctx: ToolContext, path: str, edits: Sequence[Edit]) -> Mapping[str, Any]:
    plan = await asyncio.to_thread(plan_edits, ctx, path, edits, blocking_files(ctx))
    return plan.display()


_PATH_HELP = "Path of the file: absolute, or relative to the workspace root."


class EditFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description=_PATH_HELP)
    old_string: str = Field(description="Exact text to replace, copied from read_file output without the "
                                        "line-number prefix; whitespace and indentation must match.")
    new_string: str = Field(description="Text to put in its place (must differ from old_string).")
    replace_all: bool = Field(False, description="Replace every occurrence; otherwise old_string must "
                                                 "occur exactly once.")


class EditFileTool(BaseTool[EditFileInput]):
    name = "edit_file"
    description = (
        "Replace an exact string in a text file. The file must have been read with read_file in this "
        "session and not changed since. old_string must match the file exactly (indentation included, "
        "without read_file's line-number prefix) and occur exactly once, unless replace_all is true; "
        "include a few surrounding lines to make it unique. Line endings and encoding are kept. For "
        "several changes to one file use multi_edit; to create a file use write_file.")
    input_model = EditFileInput
    guidance = (
        "edit_file fails when old_string is missing or not unique; the error shows the "
        "closest match or the lines it occurs on, so fix old_string from that.")
    writes_files = True

    def permission_target(self, args: EditFileInput, ctx: ToolContext) -> FileAccess:
        return FileAccess(paths=(str(resolve_path(ctx, args.path)),), write=True)

    async def preview(self, args: EditFileInput, ctx: ToolContext) -> Mapping[str, Any] | None:
        return await preview_edits(ctx, args.path, [_edit_of(args)])

    async def run(self, args: EditFileInput, ctx: ToolContext) -> ToolOutput:
        return await run_edits(ctx, args.path, [_edit_of(args)])


def _edit_of(args: EditFileInput) -> Edit:
    return Edit(args.old_string, args.new_string, args.replace_all)
