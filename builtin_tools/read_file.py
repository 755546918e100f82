"""read_file: a window of a text file as numbered lines, recorded for later edits."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput

from ._text import (
    LARGE_FILE_BYTES,
    LINE_NUMBER_WIDTH,
    UTF8,
    BinaryFileError,
    TextEncoding,
    binary_kind,
    bom_encoding,
    detect_encoding,
    for_display,
    normalize_newlines,
    regular_file_stat,
)

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# The pipeline elides the middle of results over 60,000 characters; stopping short of
# that keeps the numbered lines contiguous so "continue at offset N" stays true.
OUTPUT_BUDGET = 50_000
_HEAD_BYTES = 64 * 1024


class ReadFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path of the file: absolute, or relative to the workspace root.")
    offset: int = Field(1, ge=0, description="Line number to start reading from (1 = the first line).")
    limit: int = Field(DEFAULT_LIMIT, ge=1, description="Maximum number of lines to return.")


@dataclass(frozen=True)
class Window:
    """The lines read, and what the model needs to know to read on."""

    lines: list[str]  # without line endings
    first: int  # 1-based number of lines[0]
    total: int | None  # None when a huge file was not counted to the end
    more: bool
    encoding: TextEncoding


class ReadFileTool(BaseTool):
    name = "read_file"
    description = (
        "Read a text file. Returns numbered lines like `cat -n` (line number, tab, text), up to "
        f"{DEFAULT_LIMIT} lines from `offset`; a closing note says which offset to use when more lines "
        f"follow. Lines over {MAX_LINE_CHARS} characters are cut. Binary files are refused; for a "
        "folder use ls. Read a file before editing or overwriting it. Use offset and limit for big files.")
    input_model = ReadFileInput
    is_concurrency_safe = True
    is_read_only = True

    def permission_target(self, args: BaseModel, ctx: ToolContext) -> FileAccess:
        assert isinstance(args, ReadFileInput)
        return FileAccess(paths=(str(ctx.resolve(args.path)),), write=False)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, ReadFileInput)
        resolved = ctx.resolve(args.path)
        shown = ctx.workspace.relative(resolved)
        try:
            return await asyncio.to_thread(self._read, ctx, resolved, shown, max(args.offset, 1), args.limit)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except OSError as error:
            return ToolOutput(f"Cannot read {shown}: {error.strerror or error}.", is_error=True)

    def _read(self, ctx: ToolContext, resolved: Path, shown: str, offset: int, limit: int) -> ToolOutput:
        size = regular_file_stat(resolved, shown).st_size
        if size > LARGE_FILE_BYTES:
            window = _stream_window(resolved, shown, offset, limit)
        else:
            window = _load_window(resolved, shown, offset, limit)
        ctx.state.record_read(resolved)
        if window.total == 0:
            return ToolOutput(f"{shown} is empty (0 lines).")
        if not window.lines:
            return ToolOutput(
                f"{shown} has {window.total} lines, so offset {offset} is past its end. Call read_file with "
                f"an offset between 1 and {window.total}.", is_error=True)
        return ToolOutput(_render(window, offset + len(window.lines), limit))


def _render(window: Window, next_offset: int, limit: int) -> str:
    body = "\n".join(f"{n:>{LINE_NUMBER_WIDTH}}\t{_cut(line)}" for n, line in enumerate(window.lines, window.first))
    notes: list[str] = []
    last = window.first + len(window.lines) - 1
    if window.more:
        of_total = f" of {window.total}" if window.total is not None else ""
        reason = "" if len(window.lines) >= limit else "; the output size limit was reached"
        notes.append(f"Showing lines {window.first}-{last}{of_total}{reason}. More lines follow: call "
                     f"read_file with offset={next_offset} to continue.")
    if window.encoding.codec != "utf-8" or window.encoding.bom or window.encoding.errors != "strict":
        notes.append(f"The file is encoded as {window.encoding.label}; edits keep that encoding.")
    if notes:
        body += "\n\n(" + " ".join(notes) + ")"
    return body


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [line truncated: {len(line) - MAX_LINE_CHARS:,} more characters]"


def _load_window(resolved: Path, shown: str, offset: int, limit: int) -> Window:
    data = resolved.read_bytes()
    kind = binary_kind(data)
    if kind is not None:
        raise BinaryFileError(f"{shown} is a {kind} ({len(data):,} bytes); read_file only reads text files.")
    encoding = detect_encoding(data)
    text = normalize_newlines(encoding.decode(data))
    if encoding.errors == "surrogateescape":
        text = for_display(text)
    total = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    position = _line_start(text, offset - 1)
    if position < 0:
        return Window([], offset, total, False, encoding)
    lines: list[str] = []
    budget = OUTPUT_BUDGET
    while len(lines) < limit and position < len(text):
        end = text.find("\n", position)
        if end < 0:
            end = len(text)
        line = text[position:end]
        budget -= min(len(line), MAX_LINE_CHARS + 60) + LINE_NUMBER_WIDTH + 2
        if budget < 0 and lines:
            break
        lines.append(line)
        position = end + 1
    return Window(lines, offset, total, offset - 1 + len(lines) < total, encoding)


def _line_start(text: str, index: int) -> int:
    """Where 0-based line ``index`` starts, or -1 past the end.

    Whole blocks are skipped by counting their newlines in C; only the last block is
    walked line by line, and no list of the file's lines is ever built.
    """
    position, remaining = 0, index
    block = 1 << 20
    while remaining > 0 and position + block < len(text):
        found = text.count("\n", position, position + block)
        if found >= remaining:
            break
        remaining -= found
        position += block
    for _ in range(remaining):
        position = text.find("\n", position) + 1
        if position == 0:
            return -1
    return position


def _stream_window(resolved: Path, shown: str, offset: int, limit: int) -> Window:
    """A window of a file too big to load: decoded as a stream, not counted to the end."""
    with resolved.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
    kind = binary_kind(head)
    if kind is not None:
        raise BinaryFileError(f"{shown} is a {kind} ({resolved.stat().st_size:,} bytes); read_file only "
                              "reads text files.")
    encoding = bom_encoding(head) or detect_encoding(head)
    codec = "utf-8-sig" if encoding == TextEncoding("utf-8", b"\xef\xbb\xbf") else encoding.codec
    lines: list[str] = []
    budget = OUTPUT_BUDGET
    more = False
    # newline="" splits on \n, \r\n and \r without translating, as the edit tools count lines.
    with open(resolved, encoding=codec, errors="replace", newline="") as handle:
        if encoding.bom and codec != "utf-8-sig":
            handle.read(1)
        number = 0
        for raw in handle:
            number += 1
            if number < offset:
                continue
            line = raw.rstrip("\r\n")
            budget -= min(len(line), MAX_LINE_CHARS + 60) + LINE_NUMBER_WIDTH + 2
            if len(lines) >= limit or (budget < 0 and lines):
                more = True
                break
            lines.append(line)
    total = None if more else number
    return Window(lines, offset, total, more, encoding if encoding.codec != "utf-8" else UTF8)
