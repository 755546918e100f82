"""apply_patch's middle step: the parsed hunks applied to an in-memory view of the files.

Matching finds each chunk's lines in a file, each pass more forgiving than the last;
planning works out every file's final bytes, so that nothing reaches the disk unless
the whole patch applies (``_patch_commit`` then writes the plan).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from ._files.diff import diff_labels, unified_diff
from ._files.near_match import find_near_match
from ._files.text import (
    UTF8,
    TextEncoding,
    TextFileError,
    detect_newline,
    load_text,
    missing_file_message,
    normalize_newlines,
    split_lines,
)
from ._patch_format import AddFile, Chunk, DeleteFile, Hunk, PatchApplyError

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
