"""Memory files in the search index: rows of kind ``memory``, and their vectors.

Each memory file of a project is one row of ``sources`` (kind ``memory``; ``project`` is
the project's memory folder, so one project's notes are never found for another;
``title`` the file's path, ``answers`` its text; ``head`` the entry's version, so a row
is rewritten only when the file changed). :func:`sync_memory` brings the rows in step
with the folder under the index's writer lock; :func:`search_memory` ranks them by bm25.

When the user configured an embeddings endpoint, each row's vector is kept in the same
SQLite file (table ``vectors``, keyed by row and version) and a query is ranked by
cosine similarity instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..memory.entries import Entry
from . import schema
from .query import SnippetPart, split_marks, word_query
from .update import open_for_writing, writer_lock
from .vectors import Embed, pack, similarity

KIND = "memory"
SNIPPET_TOKENS = 24


@dataclass(frozen=True)
class MemoryHit:
    path: str  # the entry's path in its folder
    snippet: tuple[SnippetPart, ...]
    score: float  # bm25 (lower is better) or 1 - cosine similarity

    def marked_snippet(self, start: str = "«", end: str = "»") -> str:
        return " ".join("".join(f"{start}{p.text}{end}" if p.matched else p.text for p in self.snippet).split())


def sync_memory(db_path: Path, lock_path: Path, project: str, entries: Sequence[Entry], root: Path) -> None:
    """The ``memory`` rows of ``project`` made to match ``entries`` (files under ``root``)."""
    with writer_lock(lock_path, wait=True):
        connection, _ = open_for_writing(db_path)
        try:
            known = {row[0]: (row[1], row[2]) for row in connection.execute(
                "SELECT name, id, head FROM sources WHERE kind = ? AND project = ?", (KIND, project))}
            connection.execute("BEGIN IMMEDIATE")
            for entry in entries:
                row = known.pop(entry.path, None)
                if row is not None and row[1] == entry.version:
                    continue
                if row is not None:
                    connection.execute("DELETE FROM sources WHERE id = ?", (row[0],))
                connection.execute(
                    "INSERT INTO sources(kind, name, path, project, created, updated, inode, head, indexed_bytes,"
                    " title, answers, refs) VALUES (?, ?, ?, ?, 0, 0, 0, ?, ?, ?, ?, ?)",
                    (KIND, entry.path, str(root / entry.path), project, entry.version, len(entry.content),
                     entry.path, entry.content, entry.path))
            for _name, (source, _version) in known.items():
                connection.execute("DELETE FROM sources WHERE id = ?", (source,))
            connection.execute("COMMIT")
        finally:
            connection.close()


def search_memory(db_path: Path, query: str, project: str, *, limit: int = 5) -> list[MemoryHit]:
    """The memory files of ``project`` matching every word of ``query``, best first."""
    words = word_query(query)
    if words is None:
        return []
    connection = schema.connect(db_path)
    try:
        rows = connection.execute(
            "SELECT s.name, bm25(words, 4.0, 1.0, 1.0, 1.0, 1.0) AS score, "
            f"snippet(words, -1, char(2), char(3), '…', {SNIPPET_TOKENS}) FROM words JOIN sources s "
            "ON s.id = words.rowid WHERE words MATCH ? AND s.kind = ? AND s.project = ? ORDER BY score LIMIT ?",
            (words, KIND, project, limit)).fetchall()
    finally:
        connection.close()
    return [MemoryHit(name, split_marks(snippet), score) for name, score, snippet in rows]


def search_memory_by_meaning(db_path: Path, lock_path: Path, query: Sequence[float], project: str, embed: Embed,
                             model: str, *, limit: int = 5) -> list[MemoryHit]:
    """The memory files of ``project`` nearest in meaning to the unit vector ``query``
    (vectors made for new or changed files first, kept in the index file)."""
    with writer_lock(lock_path, wait=True):
        connection, _ = open_for_writing(db_path)
        try:
            rows = connection.execute(
                "SELECT s.id, s.name, s.head, s.answers, v.version, v.model, v.vector FROM sources s "
                "LEFT JOIN vectors v ON v.source = s.id WHERE s.kind = ? AND s.project = ?", (KIND, project)).fetchall()
            stale = [row for row in rows if row[4] != row[2] or row[5] != model]
            fresh: dict[int, bytes] = {}
            if stale:
                made = embed([f"{row[1]}\n{row[3]}" for row in stale])
                fresh = {row[0]: pack(vector) for row, vector in zip(stale, made, strict=True)}
                connection.executemany(
                    "INSERT OR REPLACE INTO vectors(source, version, model, vector) VALUES (?, ?, ?, ?)",
                    [(row[0], row[2], model, fresh[row[0]]) for row in stale])
            scored: list[tuple[float, str, str]] = []
            for source, name, _head, text, _version, _model, blob in rows:
                vector = fresh.get(source) or blob
                if vector:
                    scored.append((1.0 - similarity(query, vector), name, text))
        finally:
            connection.close()
    scored.sort()
    return [MemoryHit(name, (SnippetPart(" ".join(text.split())[:200], False),), score)
            for score, name, text in scored[:limit]]
