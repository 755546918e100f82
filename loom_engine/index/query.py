"""Searching the index: what a person typed, made into a safe FTS5 query, and the
ranked hits with a snippet each.

Nothing typed is FTS5 syntax: each whitespace-separated word is quoted as a phrase
(quotes doubled, NUL bytes and lone surrogates dropped) and the phrases are ANDed, so
``"``, ``AND``, ``NEAR(``, ``col:`` or ``*`` are only text to find. Words are matched
whole (bm25 over the unicode61 table); while a person types (``as_you_type``) the last
word also matches as a prefix. Sessions the words miss but whose paths, tool names or
title contain the typed text (every word of 3+ characters) come after them, from the
trigram table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import scrub_text

# bm25 weights of schema.TEXT_COLUMNS: the title and prompts say what a session was about.
WEIGHTS = (4.0, 2.0, 1.0, 1.0, 1.5)
# Snippet markers: control characters no indexed text keeps, so they split unambiguously.
MARK_START = "\x02"
MARK_END = "\x03"
# Words around a match (unicode61 tokens); the trigram table counts characters.
SNIPPET_TOKENS = {"words": 16, "substrings": 60}
MAX_LIMIT = 200
# Added to a substring-only hit's rank, so it sorts after every word hit (bm25 is negative).
SUBSTRING_RANK = 1e6


@dataclass(frozen=True)
class SnippetPart:
    text: str
    matched: bool


@dataclass(frozen=True)
class SearchHit:
    session_id: str
    project: str
    title: str
    created: float
    updated: float
    prompts: int
    path: str
    snippet: tuple[SnippetPart, ...]
    rank: float  # bm25 (lower is better); trigram-only hits rank after every word hit

    def marked_snippet(self, start: str = "«", end: str = "»") -> str:
        """The snippet as one line, each match between ``start`` and ``end``."""
        text = "".join(f"{start}{p.text}{end}" if p.matched else p.text for p in self.snippet)
        return " ".join(text.split())


def _words(query: str) -> list[str]:
    return [w for w in scrub_text(query.replace("\x00", "")).split() if w]


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def word_query(query: str, *, as_you_type: bool = False) -> str | None:
    """The FTS5 expression for the words of ``query``; None when it has none."""
    words = _words(query)
    if not words:
        return None
    phrases = [_phrase(w) for w in words]
    if as_you_type:
        phrases[-1] += "*"
    return " ".join(phrases)


def substring_query(query: str) -> str | None:
    """The trigram expression (every word a substring), None when a word is too short."""
    words = _words(query)
    if not words or any(len(w) < 3 for w in words):
        return None
    return " ".join(_phrase(w) for w in words)


def project_clause(project: str | None) -> tuple[str, tuple[str, ...]]:
    """The SQL (over ``sources s``) keeping rows of folder ``project`` or beneath it."""
    if not project:
        return "", ()
    under = project.rstrip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
    return " AND (s.project = ? OR s.project LIKE ? ESCAPE '\\')", (project.rstrip("/") or "/", under)


def search(connection: sqlite3.Connection, query: str, *, project: str | None = None, limit: int = 20,
           exclude: Sequence[str] = (), as_you_type: bool = False) -> list[SearchHit]:
    """The sessions matching ``query``, best first; ``project``: only sessions of that
    folder or beneath it; ``exclude``: session ids left out."""
    limit = max(1, min(limit, MAX_LIMIT))
    where, params = project_clause(project)
    if exclude:
        where += f" AND s.name NOT IN ({', '.join('?' * len(exclude))})"
        params += tuple(exclude)
    ranked: list[tuple[int, float, str]] = []  # (source id, rank, table)
    words = word_query(query, as_you_type=as_you_type)
    if words is not None:
        weights = ", ".join(str(w) for w in WEIGHTS)
        ranked += [(row[0], row[1], "words") for row in connection.execute(
            f"SELECT s.id, bm25(words, {weights}) AS score FROM words JOIN sources s ON s.id = words.rowid"
            f" WHERE words MATCH ? AND s.kind = 'session'{where} ORDER BY score, s.updated DESC LIMIT ?",
            (words, *params, limit))]
    substrings = substring_query(query)
    if substrings is not None and len(ranked) < limit:
        found = {source for source, _, _ in ranked}
        extra = connection.execute(
            f"SELECT s.id, bm25(substrings) AS score FROM substrings JOIN sources s ON s.id = substrings.rowid"
            f" WHERE substrings MATCH ? AND s.kind = 'session'{where} ORDER BY score, s.updated DESC LIMIT ?",
            (substrings, *params, limit))
        ranked += [(row[0], SUBSTRING_RANK + row[1], "substrings") for row in extra if row[0] not in found]
    ranked = ranked[:limit]
    snippets = {**_snippets(connection, "words", words, [r for r in ranked if r[2] == "words"]),
                **_snippets(connection, "substrings", substrings, [r for r in ranked if r[2] == "substrings"])}
    rows = {row[0]: row for row in connection.execute(
        "SELECT id, name, project, title, created, updated, prompt_count, path FROM sources WHERE id IN "
        f"({', '.join('?' * len(ranked))})", [r[0] for r in ranked])} if ranked else {}
    hits = []
    for source, rank, _ in ranked:
        _, name, project_path, title, created, updated, prompts, path = rows[source]
        hits.append(SearchHit(session_id=name, project=project_path, title=title, created=created, updated=updated,
                              prompts=prompts, path=path, snippet=snippets.get(source, ()), rank=rank))
    return hits


def _snippets(connection: sqlite3.Connection, table: str, expression: str | None,
              ranked: list[tuple[int, float, str]]) -> dict[int, tuple[SnippetPart, ...]]:
    """The snippets of the hits from one table (computed for them only, not every match)."""
    if expression is None or not ranked:
        return {}
    ids = [r[0] for r in ranked]
    rows = connection.execute(
        f"SELECT rowid, snippet({table}, -1, char(2), char(3), '…', {SNIPPET_TOKENS[table]}) FROM {table}"
        f" WHERE {table} MATCH ? AND rowid IN ({', '.join('?' * len(ids))})", (expression, *ids))
    return {row[0]: split_marks(row[1]) for row in rows}


def split_marks(text: str) -> tuple[SnippetPart, ...]:
    """A snippet with its match markers, as parts (text kept on one line)."""
    parts: list[SnippetPart] = []
    rest = text or ""
    while rest:
        start = rest.find(MARK_START)
        if start < 0:
            parts.append(SnippetPart(rest, False))
            break
        if start:
            parts.append(SnippetPart(rest[:start], False))
        end = rest.find(MARK_END, start)
        end = len(rest) if end < 0 else end
        parts.append(SnippetPart(rest[start + 1:end], True))
        rest = rest[end + 1:]
    return tuple(_one_line(p) for p in parts if p.text)


def _one_line(part: SnippetPart) -> SnippetPart:
    return SnippetPart(part.text.replace("\r", " ").replace("\n", " ").replace("\t", " "), part.matched)
