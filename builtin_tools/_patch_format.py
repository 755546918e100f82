"""The ``*** Begin Patch`` format: its grammar, the parsed hunks and the parse errors.

Parsing only; nothing here reads or writes a file. ``_patch_plan`` applies the parsed
hunks in memory and ``_patch_commit`` writes the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"

ParseMode = Literal["strict", "lenient", "streaming"]


class PatchError(Exception):
    """A patch that cannot be applied; the message names the file and hunk."""


class PatchParseError(PatchError):
    def __init__(self, message: str, kind: str = "invalid_patch", line_number: int | None = None) -> None:
        self.message = message
        self.kind = kind  # "invalid_patch" (the envelope) or "invalid_hunk"
        self.line_number = line_number
        if line_number is None:
            super().__init__(f"Invalid patch: {message}")
        else:
            super().__init__(f"Invalid patch hunk on line {line_number}: {message}")


class PatchApplyError(PatchError):
    pass


@dataclass(frozen=True)
class Chunk:
    change_context: str | None
    # (sign, text) in patch order; sign is " " (context), "-" or "+". The order matters:
    # it says which file line each context line stands for.
    lines: tuple[tuple[str, str], ...]
    is_end_of_file: bool = False
    line_number: int = 0  # where the chunk starts in the patch, for error messages

    @property
    def old_lines(self) -> tuple[str, ...]:
        return tuple(text for sign, text in self.lines if sign != "+")

    @property
    def new_lines(self) -> tuple[str, ...]:
        return tuple(text for sign, text in self.lines if sign != "-")


@dataclass(frozen=True)
class AddFile:
    path: str
    contents: str
    line_number: int = 0


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line_number: int = 0


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_path: str | None
    chunks: tuple[Chunk, ...]
    line_number: int = 0


Hunk = AddFile | DeleteFile | UpdateFile

_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')
_RANGE_HEADER = re.compile(r"^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def parse_patch(text: str, mode: ParseMode = "lenient") -> tuple[Hunk, ...]:
    """Parse a patch. ``lenient`` also accepts the patch wrapped in a shell heredoc;
    ``streaming`` accepts a patch still being written (no ``*** End Patch`` yet)."""
    lines = [line.removesuffix("\r") for line in text.strip().split("\n")]
    if mode == "streaming":
        if not lines or lines[0].strip() != BEGIN:
            raise PatchParseError(f"The first line of the patch must be '{BEGIN}'")
        body = lines[1:-1] if len(lines) > 1 and lines[-1].strip() == END else lines[1:]
        return _parse_hunks(body, first_line_number=2)
    try:
        return _parse_enveloped(lines)
    except PatchParseError:
        if mode != "lenient" or not _is_heredoc(lines):
            raise
    return _parse_enveloped(lines[1:-1])


def _is_heredoc(lines: list[str]) -> bool:
    return len(lines) >= 4 and lines[0].strip() in _HEREDOC_OPENERS and lines[-1].strip().endswith("EOF")


def _parse_enveloped(lines: list[str]) -> tuple[Hunk, ...]:
    if not lines or lines[0].strip() != BEGIN:
        raise PatchParseError(f"The first line of the patch must be '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchParseError(f"The last line of the patch must be '{END}'")
    return _parse_hunks(lines[1:-1], first_line_number=2)


def _parse_hunks(body: list[str], first_line_number: int) -> tuple[Hunk, ...]:
    hunks: list[Hunk] = []
    index = 0
    while index < len(body):
        line_number = first_line_number + index
        header = body[index].strip()
        if not header:
            index += 1
            continue
        if header.startswith(ADD.strip()) and header[len(ADD.strip()):][:1] in ("", " "):
            path = _header_path(header, ADD, line_number)
            index += 1
            contents: list[str] = []
            while index < len(body) and body[index].startswith("+"):
                contents.append(body[index][1:] + "\n")
                index += 1
            hunks.append(AddFile(path, "".join(contents), line_number))
        elif header.startswith(DELETE.strip()) and header[len(DELETE.strip()):][:1] in ("", " "):
            hunks.append(DeleteFile(_header_path(header, DELETE, line_number), line_number))
            index += 1
        elif header.startswith(UPDATE.strip()) and header[len(UPDATE.strip()):][:1] in ("", " "):
            path = _header_path(header, UPDATE, line_number)
            index += 1
            move_path = None
            if index < len(body) and body[index].strip().startswith(MOVE.strip()):
                move_path = _header_path(body[index].strip(), MOVE, first_line_number + index)
                index += 1
            chunks: list[Chunk] = []
            while index < len(body):
                if not body[index].strip():
                    index += 1
                    continue
                if body[index].startswith("***"):
                    break
                chunk, index = _parse_chunk(body, index, first_line_number, allow_bare=not chunks)
                chunks.append(chunk)
            if not chunks:
                raise PatchParseError(f"Update file hunk for path '{path}' is empty", "invalid_hunk", line_number)
            hunks.append(UpdateFile(path, move_path, tuple(chunks), line_number))
        else:
            raise PatchParseError(
                f"'{header}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
                "'*** Delete File: {path}', '*** Update File: {path}'", "invalid_hunk", line_number)
    return tuple(hunks)


def _header_path(header: str, prefix: str, line_number: int) -> str:
    path = header[len(prefix.strip()):].strip()
    if not path:
        raise PatchParseError(f"'{header}' names no file", "invalid_hunk", line_number)
    return path


def _parse_chunk(body: list[str], index: int, first_line_number: int, allow_bare: bool) -> tuple[Chunk, int]:
    start_number = first_line_number + index
    first = body[index]
    context: str | None
    if first.rstrip() == "@@":
        context, index = None, index + 1
    elif first.startswith("@@ "):
        context = first[3:].rstrip()
        if _RANGE_HEADER.match(context):
            context = None
        index += 1
    elif allow_bare:
        context = None
    else:
        raise PatchParseError(f"Expected update hunk to start with a @@ context marker, got: '{first}'",
                              "invalid_hunk", start_number)
    ops: list[tuple[str, str]] = []
    end_of_file = False
    lines_start = index
    while index < len(body):
        line = body[index]
        if line.rstrip() == END_OF_FILE:
            if index == lines_start:
                break
            end_of_file = True
            index += 1
            break
        sign = line[:1]
        if sign == "":
            # A blank line is an empty context line (editors strip the lone space).
            ops.append((" ", ""))
        elif sign in (" ", "-", "+"):
            ops.append((sign, line[1:]))
        elif index == lines_start:
            raise PatchParseError(
                f"Unexpected line found in update hunk: '{line}'. Every line should start with ' ' "
                "(context line), '+' (added line), or '-' (removed line)", "invalid_hunk",
                first_line_number + index)
        else:
            break
        index += 1
    if not ops:
        raise PatchParseError("Update hunk does not contain any lines", "invalid_hunk",
                              first_line_number + lines_start)
    return Chunk(context, tuple(ops), end_of_file, start_number), index
