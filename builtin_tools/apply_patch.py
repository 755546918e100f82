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
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput

from ._files.diff import diff_labels, unified_diff
from ._files.near_match import find_near_match
from ._files.paths import resolve_entry, resolve_path
from ._files.text import (
    UTF8,
    TextEncoding,
    TextFileError,
    detect_newline,
    load_text,
    missing_file_message,
    normalize_newlines,
    split_lines,
    unread_overwrite_message,
)
from ._patch_commit import CommitFailed, commit_files

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


# ----------------------------------------------------------------------------- parsing

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


# ----------------------------------------------------------------------------- matching

_TYPOGRAPHIC = str.maketrans({
    **{ch: "-" for ch in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"},
    **{ch: "'" for ch in "\u2018\u2019\u201a\u201b"},
    **{ch: '"' for ch in "\u201c\u201d\u201e\u201f"},
    **{ch: " " for ch in "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"},
})

_PASSES: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.translate(_TYPOGRAPHIC).strip(),
)


def seek_lines(lines: Sequence[str], pattern: Sequence[str], start: int, at_end: bool = False) -> int | None:
    """Index where ``pattern`` occurs in ``lines`` at or after ``start``.

    Each pass is more forgiving than the one before: exact, then ignoring trailing
    whitespace, then surrounding whitespace, then typographic dashes, quotes and spaces.
    With ``at_end`` the end of the file is tried first.
    """
    size = len(pattern)
    if size == 0:
        return start
    last = len(lines) - size
    if last < 0:
        return None
    for normal in _PASSES:
        wanted = [normal(line) for line in pattern]
        seen = lines if normal is _PASSES[0] else list(map(normal, lines))
        if at_end and list(seen[last:last + size]) == wanted:
            return last
        index = max(start, 0)
        while index <= last:
            try:
                # list.index finds candidate first lines in C; only those are compared in full.
                index = seen.index(wanted[0], index, last + 1)
            except ValueError:
                break
            if list(seen[index:index + size]) == wanted:
                return index
            index += 1
    return None


@dataclass(frozen=True)
class _Replacement:
    start: int
    length: int
    ops: tuple[tuple[str, str], ...]
    chunk_number: int


def apply_chunks(text: str, chunks: Sequence[Chunk], where: str) -> str:
    """``text`` with every chunk applied; raises PatchApplyError naming the failing chunk.

    Lines keep their own endings; added lines take the file's style; the result always
    ends with a line break.
    """
    lines = split_lines(text)
    # The same lines without their endings, split in C rather than line by line.
    bodies = normalize_newlines(text).split("\n")
    if bodies[-1] == "":
        bodies.pop()
    newline = detect_newline(text)
    replacements: list[_Replacement] = []
    position = 0
    for number, chunk in enumerate(chunks, start=1):
        label = f"{where}, hunk {number} (patch line {chunk.line_number})"
        if chunk.change_context is not None:
            found = seek_lines(bodies, [chunk.change_context], position)
            if found is None:
                found = seek_lines(bodies, [chunk.change_context], 0)
            if found is None:
                raise PatchApplyError(f"{label}: the context line '@@ {chunk.change_context}' was not found."
                                      + _near_hint(bodies, [chunk.change_context]))
            position = found + 1
        ops = chunk.lines
        old = chunk.old_lines
        if not old:
            at = position if chunk.change_context is not None and not chunk.is_end_of_file else len(bodies)
            replacements.append(_Replacement(at, 0, ops, number))
            continue
        found = _seek_chunk(bodies, old, position, chunk.is_end_of_file)
        if found is None and old[-1] == "":
            # A blank line the model left before *** End Patch is not part of the file.
            last = max(i for i, (sign, _) in enumerate(ops) if sign != "+")
            ops = ops[:last] + ops[last + 1:]
            old = old[:-1]
            found = _seek_chunk(bodies, old, position, chunk.is_end_of_file) if old else None
        if found is None:
            after = f" after line {position}" if position else ""
            raise PatchApplyError(f"{label}: these lines were not found{after}:\n" + "\n".join(chunk.old_lines)
                                  + _near_hint(bodies, chunk.old_lines))
        replacements.append(_Replacement(found, len(old), ops, number))
        position = found + len(old)
    replacements.sort(key=lambda r: (r.start, r.length))
    for earlier, later in pairwise(replacements):
        if later.start < earlier.start + earlier.length:
            first, second = sorted((earlier.chunk_number, later.chunk_number))
            raise PatchApplyError(f"{where}: hunks {first} and {second} change overlapping lines; merge them "
                                  "into one hunk.")
    out: list[str] = []
    cursor = 0
    for rep in replacements:
        out.extend(lines[cursor:rep.start])
        file_line = rep.start
        for sign, text in rep.ops:
            if sign == "+":
                out.append(text + newline)
                continue
            if sign == " ":
                # Context stays exactly as the file has it, ending and whitespace included.
                out.append(lines[file_line])
            file_line += 1
        cursor = rep.start + rep.length
    out.extend(lines[cursor:])
    return "".join(line if line.endswith(("\n", "\r")) else line + newline for line in out)


def _seek_chunk(bodies: list[str], old: Sequence[str], position: int, at_end: bool) -> int | None:
    found = seek_lines(bodies, old, position, at_end)
    if found is None and position > 0:
        found = seek_lines(bodies, old, 0, at_end)
    return found


def _near_hint(bodies: list[str], wanted: Sequence[str]) -> str:
    near = find_near_match("\n".join(bodies), "\n".join(wanted))
    if near is None:
        return ""
    return f"\nThe closest text in the file starts at line {near.line}:\n{near.render()}"


# ----------------------------------------------------------------------------- planning

@dataclass
class _Entry:
    """A file as the patch sees it so far; ``text`` is None for a file not read as text."""

    text: str | None
    encoding: TextEncoding
    mode: int | None


@dataclass(frozen=True)
class Change:
    """One hunk's effect, for the summary and the diff."""

    letter: str  # A, M or D
    path: str  # as written in the patch (the destination for a move)
    diff: str


@dataclass
class PatchPlan:
    """The files' final states, worked out in memory; nothing is on disk yet."""

    changes: list[Change] = field(default_factory=list)
    # Resolved path -> new bytes and mode, or None to delete; in first-touched order.
    final: dict[Path, tuple[bytes, int | None] | None] = field(default_factory=dict)
    added: set[Path] = field(default_factory=set)

    @property
    def diff(self) -> str:
        return "".join(change.diff for change in self.changes)

    def summary(self) -> str:
        # Added, then modified, then deleted, as Codex reports it.
        ordered = sorted(self.changes, key=lambda change: "AMD".index(change.letter))
        return "Success. Updated the following files:\n" + "".join(
            f"{change.letter} {change.path}\n" for change in ordered)


Resolver = Callable[[str], Path]
# Raises PatchApplyError when an Add File hunk may not replace the existing file.
OverwriteCheck = Callable[[Path, str], None]


def plan_patch(hunks: Sequence[Hunk], resolve: Resolver, *, resolve_link: Resolver | None = None,
               check_overwrite: OverwriteCheck | None = None) -> PatchPlan:
    """Apply ``hunks`` to an in-memory view of the files; raises PatchApplyError.

    ``resolve_link`` resolves a Delete File path without following its last component,
    so that deleting a symlink removes the link and not its target. ``check_overwrite``
    is asked before an Add File hunk replaces a file that exists on disk.
    """
    if not hunks:
        raise PatchApplyError("The patch contains no file operations (nothing between the Begin and End lines).")
    plan = PatchPlan()
    view: dict[Path, _Entry | None] = {}

    def current(path: Path, written: str, action: str, need_text: bool) -> _Entry:
        if path in view:
            entry = view[path]
            if entry is None:
                raise PatchApplyError(f"Failed to {action} {written}: an earlier hunk of this patch deleted it.")
            return entry
        if path.is_dir():
            raise PatchApplyError(f"Failed to {action} {written}: it is a directory, not a file.")
        if not path.exists():
            raise PatchApplyError(f"Failed to {action} {written}: {missing_file_message(path, written)}")
        if not need_text:
            return _Entry(None, UTF8, stat.S_IMODE(path.stat().st_mode))
        try:
            loaded = load_text(path, written)
        except TextFileError as error:
            raise PatchApplyError(f"Failed to {action} {written}: {error}") from None
        return _Entry(loaded.text, loaded.encoding, loaded.mode)

    def put(path: Path, entry: _Entry | None, written: str) -> None:
        view[path] = entry
        if entry is None:
            plan.final[path] = None
            return
        assert entry.text is not None
        try:
            data = entry.encoding.encode(entry.text)
        except TextFileError as error:
            raise PatchApplyError(f"Failed to write {written}: {error}") from None
        plan.final[path] = (data, entry.mode)

    for hunk in hunks:
        if isinstance(hunk, DeleteFile) and resolve_link is not None:
            link = resolve_link(hunk.path)
            if os.path.islink(link) and link not in view:
                put(link, None, hunk.path)
                plan.changes.append(Change("D", hunk.path, f"--- a/{hunk.path}\n+++ /dev/null\n"
                                                          "(symbolic link deleted; its target is kept)\n"))
                continue
        path = resolve(hunk.path)
        if isinstance(hunk, AddFile):
            if path not in view and os.path.lexists(path) and not path.is_dir() and check_overwrite is not None:
                check_overwrite(path, hunk.path)
            previous = view.get(path) if path in view else _existing(path, hunk.path)
            before = previous.text if previous is not None else None
            put(path, _Entry(hunk.contents, UTF8, previous.mode if previous is not None else None), hunk.path)
            plan.added.add(path)
            labels = diff_labels(hunk.path, created=before is None)
            plan.changes.append(Change("A", hunk.path, unified_diff(before or "", hunk.contents, *labels)))
        elif isinstance(hunk, DeleteFile):
            entry = current(path, hunk.path, "delete", need_text=False)
            if entry.text is None:
                entry = _entry_for_diff(path)
            put(path, None, hunk.path)
            labels = diff_labels(hunk.path, deleted=True)
            shown = unified_diff(entry.text, "", *labels) if entry.text is not None else \
                f"--- a/{hunk.path}\n+++ /dev/null\n(binary file deleted)\n"
            plan.changes.append(Change("D", hunk.path, shown))
        else:
            entry = current(path, hunk.path, "update", need_text=True)
            assert entry.text is not None
            after = apply_chunks(entry.text, hunk.chunks, f"Update File: {hunk.path}")
            updated = _Entry(after, entry.encoding, entry.mode)
            target_name = hunk.move_path or hunk.path
            target = resolve(hunk.move_path) if hunk.move_path else path
            if target != path:
                if target.is_dir() and target not in view:
                    raise PatchApplyError(f"Failed to move {hunk.path} to {hunk.move_path}: the destination "
                                          "is a directory.")
                put(target, updated, target_name)
                put(path, None, hunk.path)
            else:
                put(path, updated, target_name)
            labels = (f"a/{hunk.path}", f"b/{target_name}")
            shown = unified_diff(entry.text, after, *labels)
            if not shown and target != path:
                shown = f"--- a/{hunk.path}\n+++ b/{target_name}\n(moved without changes)\n"
            plan.changes.append(Change("M", target_name, shown))
    return plan


def _existing(path: Path, written: str) -> _Entry | None:
    """What an Add File hunk will overwrite (Codex lets Add replace a file)."""
    if path.is_dir():
        raise PatchApplyError(f"Failed to add {written}: a directory with that name exists.")
    if not path.exists():
        return None
    return _entry_for_diff(path)


def _entry_for_diff(path: Path) -> _Entry:
    mode = stat.S_IMODE(path.stat().st_mode)
    try:
        loaded = load_text(path, str(path))
    except TextFileError:
        return _Entry(None, UTF8, mode)
    return _Entry(loaded.text, loaded.encoding, loaded.mode)


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
        plan = await asyncio.to_thread(_plan, args.patch, ctx)
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
