"""Past sessions by meaning: a vector for each exchange of a session, kept in the index.

Only used when the user configured an embeddings endpoint. An exchange is a prompt and
the answers that followed it (``extract.read_exchanges``: the redacted text the index
holds, capped), keyed by its session's row and its place in it, with a digest of its
text and the model that embedded it. Vectors are made lazily, at recall:

- :func:`embed_missing` finds this project's sessions whose vectors are behind the index
  (new, grown, replaced, or embedded by another model), newest first, reads their
  exchanges, and embeds those whose text or model changed, at most ``budget`` per call,
  in batches: the first recall over a thousand sessions embeds a few hundred exchanges,
  not all of them, and each later recall goes on where it stopped. Nothing is sent while
  the index's writer lock is held; what came back is written under it, per batch.
- :func:`nearest_sessions` ranks the sessions that have vectors by their best exchange
  (sign bits first, the exact similarity for the closest few hundred exchanges).
- :func:`fuse` merges that ranking with the words ranking (bm25) by reciprocal rank, so a
  session not embedded yet is still found by its words, and one found both ways leads.

A session row removed (the file gone or rewritten) takes its vectors with it (trigger).
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..redact import Redactor
from . import schema
from .extract import read_exchanges
from .query import SearchHit, SnippetPart, project_clause
from .update import writer_lock
from .vectors import Embed, pack, sign_bits, sign_distance, similarity

# Exchanges embedded by one recall at most, and per request to the endpoint.
BUDGET = 256
BATCH = 64
EXCERPT_CHARS = 200
# Exchanges compared exactly at a search, chosen by their sign bits (vectors.py): the
# exact comparison costs ~0.1 ms each in pure Python, the sign bits ~0.4 µs.
RESCORED = 300
# Reciprocal rank fusion's constant (the usual 60: the top few ranks of either list
# count, and agreeing lists outweigh one list's first place).
RRF_K = 60


@dataclass(frozen=True)
class Embedding:
    """What one :func:`embed_missing` did."""

    exchanges: int  # exchanges embedded
    requests: int  # requests made to the endpoint
    behind: int  # sessions of the project whose vectors are still behind (found by words meanwhile)


@dataclass(frozen=True)
class _Pending:
    source: int
    seq: int
    digest: str
    text: str


@dataclass(frozen=True)
class _Caught:
    """A session all of whose exchanges are embedded once the pending ones are written."""

    source: int
    head: str
    indexed_bytes: int
    count: int


def embed_missing(db_path: Path, lock_path: Path, project: str, embed: Embed, model: str, redactor: Redactor,
                  *, budget: int = BUDGET, batch: int = BATCH) -> Embedding:
    """Embed the exchanges of ``project``'s sessions that have no current vector, at
    most ``budget`` of them."""
    pending, caught, behind = _plan(db_path, project, model, redactor, budget)
    requests = 0
    for start in range(0, len(pending), batch):
        part = pending[start:start + batch]
        vectors = embed([item.text for item in part])
        requests += 1
        if len(vectors) != len(part):
            raise ValueError(f"the embeddings endpoint answered {len(vectors)} vectors for {len(part)} texts")
        done = caught if start + batch >= len(pending) else []
        _store(db_path, lock_path, model, list(zip(part, vectors, strict=True)), done)
    if not pending and caught:
        _store(db_path, lock_path, model, [], caught)
    return Embedding(exchanges=len(pending), requests=requests, behind=behind - len(caught))


def _plan(db_path: Path, project: str, model: str, redactor: Redactor,
          budget: int) -> tuple[list[_Pending], list[_Caught], int]:
    """The exchanges to embed (at most ``budget``), the sessions that then are caught up,
    and how many sessions are behind now."""
    where, params = project_clause(project)
    connection = schema.connect(db_path)
    try:
        behind = connection.execute(
            "SELECT s.id, s.path, s.head, s.indexed_bytes FROM sources s LEFT JOIN embedded e ON e.source = s.id"
            f" WHERE s.kind = 'session'{where} AND (e.source IS NULL OR e.head != s.head"
            " OR e.indexed_bytes != s.indexed_bytes OR e.model != ?) ORDER BY s.updated DESC",
            (*params, model)).fetchall()
        pending: list[_Pending] = []
        caught: list[_Caught] = []
        for source, path, head, indexed_bytes in behind:
            if len(pending) >= budget:
                break
            try:
                texts = read_exchanges(Path(path), indexed_bytes, redactor)
            except OSError:
                continue  # gone meanwhile: the next catch-up removes its row
            have = dict(connection.execute(
                "SELECT seq, digest FROM exchange_vectors WHERE source = ? AND model = ?", (source, model)))
            wanted = []
            for seq, text in enumerate(texts):
                digest = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
                if have.get(seq) != digest:
                    wanted.append(_Pending(source, seq, digest, text))
            room = budget - len(pending)
            pending += wanted[:room]
            if len(wanted) <= room:
                caught.append(_Caught(source, head, indexed_bytes, len(texts)))
    finally:
        connection.close()
    return pending, caught, len(behind)


def _store(db_path: Path, lock_path: Path, model: str, made: Sequence[tuple[_Pending, list[float]]],
           caught: Sequence[_Caught]) -> None:
    """Write vectors made (for rows still of the same file) and mark sessions caught up."""
    with writer_lock(lock_path, wait=True):
        try:
            connection = schema.connect(db_path)
        except schema.IndexUnusable:
            return  # rebuilt meanwhile: its rows are new, and so will their vectors be
        try:
            connection.execute("BEGIN IMMEDIATE")
            ids = sorted({item.source for item, _ in made} | {session.source for session in caught})
            heads: dict[int, str] = dict(connection.execute(
                f"SELECT id, head FROM sources WHERE id IN ({', '.join('?' * len(ids))})", ids)) if ids else {}
            connection.executemany(
                "INSERT OR REPLACE INTO exchange_vectors(source, seq, digest, model, excerpt, bits, vector)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(item.source, item.seq, item.digest, model, item.text[:EXCERPT_CHARS], sign_bits(vector),
                  pack(vector)) for item, vector in made if item.source in heads])
            for session in caught:
                if heads.get(session.source) != session.head:
                    continue  # replaced meanwhile
                connection.execute("DELETE FROM exchange_vectors WHERE source = ? AND seq >= ?",
                                   (session.source, session.count))
                connection.execute(
                    "INSERT OR REPLACE INTO embedded(source, head, indexed_bytes, model) VALUES (?, ?, ?, ?)",
                    (session.source, session.head, session.indexed_bytes, model))
            connection.execute("COMMIT")
        finally:
            connection.close()


def nearest_sessions(db_path: Path, query: Sequence[float], model: str, project: str, *,
                     exclude: Sequence[str] = (), limit: int = 20) -> list[SearchHit]:
    """``project``'s sessions nearest in meaning to the unit vector ``query`` (by their
    nearest exchange embedded by ``model``), nearest first; ``rank`` is minus the similarity.

    The exchanges closest by sign bits (at most :data:`RESCORED`; all of them in a
    project with fewer) are compared exactly; the rest are not read."""
    where, params = project_clause(project)
    if exclude:
        where += f" AND s.name NOT IN ({', '.join('?' * len(exclude))})"
        params += tuple(exclude)
    query_bits = int.from_bytes(sign_bits(query), "little")
    connection = schema.connect(db_path)
    try:
        sketches = connection.execute(
            "SELECT v.rowid, v.bits FROM sources s JOIN exchange_vectors v ON v.model = ? AND v.source = s.id"
            f" WHERE s.kind = 'session'{where}", (model, *params)).fetchall()
        closest = heapq.nsmallest(RESCORED, sketches, key=lambda row: sign_distance(query_bits, row[1]))
        best: dict[int, tuple[float, str]] = {}
        marks = ", ".join("?" * len(closest))
        for source, blob, excerpt in connection.execute(
                f"SELECT source, vector, excerpt FROM exchange_vectors WHERE rowid IN ({marks})",
                [row[0] for row in closest]):
            score = similarity(query, blob)
            if score > 0 and score > best.get(source, (0.0, ""))[0]:
                best[source] = (score, excerpt)
        chosen = sorted(best.items(), key=lambda item: -item[1][0])[:limit]
        rows = {row[0]: row for row in connection.execute(
            "SELECT id, name, project, title, created, updated, prompt_count, path FROM sources WHERE id IN "
            f"({', '.join('?' * len(chosen))})", [source for source, _ in chosen])} if chosen else {}
    finally:
        connection.close()
    return [SearchHit(session_id=rows[source][1], project=rows[source][2], title=rows[source][3],
                      created=rows[source][4], updated=rows[source][5], prompts=rows[source][6],
                      path=rows[source][7], snippet=(SnippetPart(excerpt, False),), rank=-score)
            for source, (score, excerpt) in chosen]


def fuse(by_words: Sequence[SearchHit], by_meaning: Sequence[SearchHit], limit: int) -> list[SearchHit]:
    """The two rankings merged by reciprocal rank (a session's word hit, with its marked
    snippet, stands for it when it has one)."""
    scores: dict[str, float] = {}
    hits: dict[str, SearchHit] = {}
    for ranking in (by_words, by_meaning):
        for place, hit in enumerate(ranking, 1):
            scores[hit.path] = scores.get(hit.path, 0.0) + 1.0 / (RRF_K + place)
            hits.setdefault(hit.path, hit)
    order = sorted(scores, key=lambda path: -scores[path])  # stable: words first on a tie
    return [hits[path] for path in order[:limit]]
