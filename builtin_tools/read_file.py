"""read_file: a window of a text file as numbered lines, recorded for later edits.

The file is read as a stream of chunks whatever its size: memory holds one chunk and
the lines being returned (each cut to MAX_LINE_CHARS), so a 200 MB file, or one with
no line break at all, costs no more than a small one.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.key_blocks import OpenBlock
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput
from loom_engine.tools.io import IOBackendError

from ._files.access import BlockingFiles, blocking_files
from ._files.paths import resolve_path
from ._files.text import (
    CP1252_UNDEFINED,
    LARGE_FILE_BYTES,
    LINE_NUMBER_WIDTH,
    UTF8,
    BinaryFileError,
    TextEncoding,
    TextFileError,
    binary_kind,
    bom_encoding,
    detect_encoding,
    escape_counts,
    for_display,
    lines_phrase,
    not_utf8,
    regular_file_stat,
)

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# The pipeline elides the middle of results over 60,000 characters; stopping short of
# that keeps the numbered lines contiguous so "continue at offset N" stays true.
OUTPUT_BUDGET = 50_000
_HEAD_BYTES = 64 * 1024
_CHUNK_BYTES = 1024 * 1024


class ReadFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path of the file: absolute, or relative to the workspace root.")
    offset: int = Field(1, ge=0, description="Line number to start reading from (1 = the first line).")
    limit: int = Field(DEFAULT_LIMIT, ge=1, description="Maximum number of lines to return.")


@dataclass(frozen=True)
class Window:
    """The lines read, and what the model needs to know to read on."""

    lines: list[tuple[str, int]]  # each line's start (at most MAX_LINE_CHARS) and its full length
    first: int  # 1-based number of lines[0]
    total: int | None  # None when a huge file was not counted to the end
    more: bool
    encoding: TextEncoding
    # The BEGIN line of a private-key block the window starts inside of (it is above it).
    key_opened_above: str | None = None


class ReadFileTool(BaseTool[ReadFileInput]):
    name = "read_file"
    description = (
        "Read a text file. Returns numbered lines like `cat -n` (line number, tab, text), up to "
        f"{DEFAULT_LIMIT} lines from `offset`; a closing note says which offset to use when more lines "
        f"follow. Lines over {MAX_LINE_CHARS} characters are cut. Binary files are refused; for a "
        "folder use ls. Read a file before editing or overwriting it. Use offset and limit for big files.")
    input_model = ReadFileInput
    is_concurrency_safe = True
    is_read_only = True
    guidance = (
        "read_file returns numbered lines (line number, a tab, the text). Read long "
        "files in ranges with offset and limit instead of all at once.")
    reads_files = True

    def permission_target(self, args: ReadFileInput, ctx: ToolContext) -> FileAccess:
        return FileAccess(paths=(str(resolve_path(ctx, args.path)),), write=False)

    async def run(self, args: ReadFileInput, ctx: ToolContext) -> ToolOutput:
        try:
            resolved = resolve_path(ctx, args.path)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        shown = ctx.workspace.relative(resolved)
        try:
            return await asyncio.to_thread(self._read, ctx, blocking_files(ctx), resolved, shown,
                                           max(args.offset, 1), args.limit)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except OSError as error:
            return ToolOutput(f"Cannot read {shown}: {error.strerror or error}.", is_error=True)

    def _read(self, ctx: ToolContext, files: BlockingFiles, resolved: Path, shown: str, offset: int,
              limit: int) -> ToolOutput:
        regular_file_stat(resolved, shown)
        try:
            opened = files.open_read(resolved, shown)
        except OSError as error:
            raise TextFileError(f"Cannot read {shown}: {error.strerror or error}.") from None
        except IOBackendError as error:
            raise TextFileError(f"Cannot read {shown}: {error}") from None
        with opened.handle as handle:
            head = handle.read(_HEAD_BYTES)
            kind = binary_kind(head)
            if kind is not None:
                raise BinaryFileError(f"{shown} is a {kind} ({opened.size:,} bytes); read_file only reads text "
                                      "files.")
            # Up to LARGE_FILE_BYTES the whole file decides the encoding and is counted to its
            # end; beyond, the first 64 KiB decide and counting stops after the window.
            whole = opened.size <= LARGE_FILE_BYTES
            encoding = _scan_encoding(handle, head) if whole else bom_encoding(head) or detect_encoding(head)
            window = _read_window(handle, encoding, offset, limit, count_to_end=whole)
        ctx.state.record_read(resolved)
        if window.total == 0:
            return ToolOutput(f"{shown} is empty (0 lines).")
        if not window.lines:
            # Not an error: the model learns the file's length, which is what it needs to go on.
            # (An empty window is always read to the end, so the total is known.)
            total = window.total or 0
            return ToolOutput(f"(No lines shown: {shown} has {lines_phrase(total)}, so offset {offset} is past "
                              f"its end. Call read_file with an offset between 1 and {total} to read it.)")
        return ToolOutput(_render(window, offset + len(window.lines), limit))


def _render(window: Window, next_offset: int, limit: int) -> str:
    body = "\n".join(f"{n:>{LINE_NUMBER_WIDTH}}\t{_cut(*line)}" for n, line in enumerate(window.lines, window.first))
    if window.key_opened_above is not None:
        # The marker in this note is what tells the redactor that the lines below are key
        # material, whatever their width (see loom_engine.key_blocks).
        body = (f"(Line {window.first} is inside a private key block that starts above it: "
                f"{window.key_opened_above})\n{body}")
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


def _cut(start: str, length: int) -> str:
    if length <= MAX_LINE_CHARS:
        return start
    return f"{start[:MAX_LINE_CHARS]}... [line truncated: {length - MAX_LINE_CHARS:,} more characters]"


def _chunks(handle: BinaryIO, start: int) -> Iterator[bytes]:
    handle.seek(start)
    while chunk := handle.read(_CHUNK_BYTES):
        yield chunk


def _scan_encoding(handle: BinaryIO, head: bytes) -> TextEncoding:
    """What detect_encoding would say of the whole file, found chunk by chunk."""
    by_bom = bom_encoding(head)
    if by_bom is not None:
        if _decodes(handle, by_bom.codec, len(by_bom.bom)):
            return by_bom
        return TextEncoding("latin-1")
    if _decodes(handle, "utf-8", 0):
        return UTF8
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    stray = multibyte = 0
    cp1252_decodes = True
    for chunk in _chunks(handle, 0):
        found = escape_counts(decoder.decode(chunk))
        stray, multibyte = stray + found[0], multibyte + found[1]
        cp1252_decodes = cp1252_decodes and not any(b in chunk for b in CP1252_UNDEFINED)
    return not_utf8(stray, multibyte, cp1252_decodes=cp1252_decodes)


def _decodes(handle: BinaryIO, codec: str, start: int) -> bool:
    decoder = codecs.getincrementaldecoder(codec)("strict")
    try:
        for chunk in _chunks(handle, start):
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _texts(handle: BinaryIO, encoding: TextEncoding) -> Iterator[str]:
    """The file's text chunk by chunk, every line ending (\\r\\n, \\r, \\n) turned into \\n."""
    # Stray bytes of a UTF-8 file stay lone surrogates until display; other codecs only
    # fail on a huge file whose head chose the codec, and then show U+FFFD.
    decoder = codecs.getincrementaldecoder(encoding.codec)("surrogateescape" if encoding.codec == "utf-8"
                                                            else "replace")
    held_cr = ""  # a chunk's final \r may be the first half of \r\n
    for chunk in _chunks(handle, len(encoding.bom)):
        text = held_cr + decoder.decode(chunk)
        held_cr = "\r" if text.endswith("\r") else ""
        if held_cr:
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text:
            yield text
    rest = decoder.decode(b"", final=True) + held_cr
    if rest:
        yield rest.replace("\r\n", "\n").replace("\r", "\n")


def _read_window(handle: BinaryIO, encoding: TextEncoding, offset: int, limit: int, *,
                 count_to_end: bool) -> Window:
    """Lines ``offset``.. of the file, cut to MAX_LINE_CHARS, within the output budget.

    Without ``count_to_end`` reading stops once it is known that more lines follow
    (the total is then unknown).
    """
    display = encoding.codec == "utf-8"
    breaks = 0  # line breaks seen so far
    last = ""  # the last character seen, to count a final line that has no break
    to_skip = offset - 1
    lines: list[tuple[str, int]] = []
    parts: list[str] = []  # the start of the line being read
    kept = length = 0  # characters in parts; the line's full length so far
    budget = OUTPUT_BUDGET
    full = more = False  # the window is complete; a line follows it
    above = OpenBlock()  # a private-key block the lines skipped leave open

    def take() -> bool:
        """Add the line read so far to the window; False when it does not fit."""
        nonlocal parts, kept, length, budget
        cost = min(length, MAX_LINE_CHARS + 60) + LINE_NUMBER_WIDTH + 2
        if len(lines) >= limit or (budget - cost < 0 and lines):
            return False
        budget -= cost
        start = "".join(parts)
        lines.append((for_display(start) if display else start, length))
        parts, kept, length = [], 0, 0
        return True

    for text in _texts(handle, encoding):
        last = text[-1]
        position = 0
        if to_skip:
            found = text.count("\n")
            if found < to_skip:
                above.feed(text)
                breaks, to_skip = breaks + found, to_skip - found
                continue
            for _ in range(to_skip):
                position = text.index("\n", position) + 1
            above.feed(text[:position])
            breaks, to_skip = breaks + to_skip, 0
        while not full and position < len(text):
            end = text.find("\n", position)
            piece = text[position:] if end < 0 else text[position:end]
            if kept < MAX_LINE_CHARS:
                parts.append(piece[:MAX_LINE_CHARS - kept])
                kept += len(parts[-1])
            length += len(piece)
            if end < 0:
                position = len(text)
                break
            breaks += 1
            position = end + 1
            if not take():
                full = more = True
            elif len(lines) >= limit:
                full = True
        if full:
            more = more or position < len(text)
            breaks += text.count("\n", position)
            if more and not count_to_end:
                return Window(lines, offset, None, True, encoding, above.marker)
    if not full and not to_skip and (parts or length) and not take():
        more = True
    total = breaks + (1 if last and last != "\n" else 0)
    return Window(lines, offset, total, more or offset - 1 + len(lines) < total, encoding, above.marker)
