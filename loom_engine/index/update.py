"""Bringing the index up to date with the session files, one writer at a time.

The writer lock is an ``flock`` on a file beside the index (the kernel drops it when
the holder dies): two Loom processes never write, or rebuild, the index at once. A
process that finds the lock taken skips its catch-up (someone is doing it) unless it
has no usable index at all, in which case it waits for the other to finish.

A catch-up is cheap when little changed: one ``stat`` per session file; a file whose
size and inode match what was read is skipped, a grown one is read from where reading
stopped, one that shrank or was replaced (another first line) is read afresh, and the
rows of files that are gone are removed. All of it is one transaction: readers (WAL)
see the index before or after it, never half-way.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..private_files import open_private, private_folder
from ..redact import Redactor
from . import schema
from .extract import SessionText, joined, read_from, read_head


@dataclass(frozen=True)
class CatchUp:
    """What one catch-up did."""

    read: int  # files read (new or grown)
    removed: int  # rows of files that are gone
    rebuilt: bool  # the index was made afresh first


@contextmanager
def writer_lock(lock_path: Path, *, wait: bool) -> Iterator[bool]:
    """Hold the index's writer lock while inside; yields False (and holds nothing)
    when ``wait`` is False and another process holds it."""
    private_folder(lock_path.parent)
    handle: IO[str] = open_private(lock_path, "a")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        handle.close()  # releases the lock


def open_for_writing(db_path: Path) -> tuple[sqlite3.Connection, bool]:
    """The index, made afresh when it is unusable; and whether it was. Holder of the
    writer lock only."""
    try:
        return schema.connect(db_path), False
    except schema.IndexUnusable:
        return schema.create(db_path), True


def catch_up(db_path: Path, sessions_root: Path, redactor: Redactor) -> CatchUp:
    """Bring the index at ``db_path`` up to date with every session file in
    ``sessions_root``. Holder of the writer lock only."""
    connection, rebuilt = open_for_writing(db_path)
    try:
        try:
            result = _catch_up(connection, sessions_root, redactor)
        except sqlite3.DatabaseError:
            # Damaged in a way opening did not show: start again from the files.
            connection.close()
            connection = schema.create(db_path)
            rebuilt = True
            result = _catch_up(connection, sessions_root, redactor)
        return CatchUp(read=result[0], removed=result[1], rebuilt=rebuilt)
    finally:
        connection.close()


def catch_up_file(db_path: Path, path: Path, redactor: Redactor) -> None:
    """Index what was added to one session file (the one just closed). Holder of the
    writer lock only; an unusable index is left for the next full catch-up."""
    try:
        connection = schema.connect(db_path)
    except schema.IndexUnusable:
        return
    try:
        known = {row[0]: row for row in connection.execute(_KNOWN + " WHERE path = ?", (str(path),))}
        connection.execute("BEGIN IMMEDIATE")
        try:
            _update_file(connection, path, known.get(str(path)), redactor)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    finally:
        connection.close()


_KNOWN = "SELECT path, id, inode, head, indexed_bytes FROM sources"
_KnownRow = tuple[str, int, int, str, int]


def _catch_up(connection: sqlite3.Connection, sessions_root: Path, redactor: Redactor) -> tuple[int, int]:
    known: dict[str, _KnownRow] = {row[0]: row for row in connection.execute(_KNOWN + " WHERE kind = 'session'")}
    try:
        paths = [entry for entry in os.scandir(sessions_root) if entry.name.endswith(".jsonl")]
    except FileNotFoundError:
        paths = []
    read = 0
    connection.execute("BEGIN IMMEDIATE")
    try:
        seen: set[str] = set()
        for entry in paths:
            seen.add(entry.path)
            row = known.get(entry.path)
            try:
                stat = entry.stat()
            except OSError:
                continue  # gone meanwhile
            if row is not None and (stat.st_ino, stat.st_size) == (row[2], row[4]):
                continue  # unchanged: the common case, decided without building a Path
            read += _update_file(connection, Path(entry.path), row, redactor)
        gone = [row[1] for path, row in known.items() if path not in seen]
        connection.executemany("DELETE FROM sources WHERE id = ?", [(source,) for source in gone])
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return read, len(gone)


def _update_file(connection: sqlite3.Connection, path: Path, known: _KnownRow | None, redactor: Redactor) -> int:
    """Read what is new in one file into its row; 1 when the file was read, else 0."""
    try:
        stat = path.stat()
        if known is not None:
            _, source, inode, head, indexed = known
            if stat.st_ino == inode and stat.st_size == indexed:
                return 0  # unchanged
            if stat.st_ino == inode and stat.st_size > indexed and read_head(path) == head:
                part = read_from(path, indexed, redactor)
                _append(connection, source, part.text, part.end, stat.st_mtime)
                return 1
            connection.execute("DELETE FROM sources WHERE id = ?", (source,))  # replaced: afresh
        part = read_from(path, 0, redactor)
    except OSError:
        return 0  # gone or unreadable meanwhile: the next catch-up sees it again
    if part.header is None:
        return 0  # no whole first line yet
    header = part.header
    text = part.text
    connection.execute(
        "INSERT INTO sources(kind, name, path, project, created, updated, prompt_count, inode, head, indexed_bytes,"
        " title, prompts, answers, tools, refs) VALUES ('session', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (header.session_id, str(path), header.project, header.created, stat.st_mtime, text.prompt_count,
         stat.st_ino, header.head, part.end, _title(text), joined("", text.prompts), joined("", text.answers),
         joined("", text.tools), joined("", [header.project, *text.refs])))
    return 1


def _append(connection: sqlite3.Connection, source: int, text: SessionText, end: int, mtime: float) -> None:
    row = connection.execute("SELECT title, prompts, answers, tools, refs FROM sources WHERE id = ?",
                             (source,)).fetchone()
    title, prompts, answers, tools, refs = row
    changed = text.prompts or text.answers or text.tools or text.refs
    if changed:
        connection.execute(
            "UPDATE sources SET title = ?, prompts = ?, answers = ?, tools = ?, refs = ?, prompt_count ="
            " prompt_count + ?, indexed_bytes = ?, updated = ? WHERE id = ?",
            (title or _title(text), joined(prompts, text.prompts), joined(answers, text.answers),
             joined(tools, text.tools), joined(refs, text.refs), text.prompt_count, end, mtime, source))
    else:  # turn states, model switches: only where reading stopped moves (no FTS rewrite)
        connection.execute("UPDATE sources SET indexed_bytes = ?, updated = ? WHERE id = ?", (end, mtime, source))


def _title(text: SessionText) -> str:
    first = text.prompts[0] if text.prompts else ""
    return " ".join(first.split())[:200]
