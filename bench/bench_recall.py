"""recall (issue 24 §1) over 1,000 past sessions of one project: by words, and by meaning
once every exchange has its vector; and what the first recall by meaning costs.

The embeddings endpoint is stood in for in-process by a hashed bag of words of 1,536
dimensions (the size of OpenAI's text-embedding-3-small), so the rows measure Loom's own
time: the time spent inside the stand-in is counted apart and left out. A real endpoint
adds its own time per request (the rows say how many requests). ``BENCH_RECALL_SESSIONS``
runs it at another size. Run with ``python -m bench bench_recall``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median, quantiles
from typing import Any

from bench.bench_session_search import row, write_sessions

SESSIONS = int(os.environ.get("BENCH_RECALL_SESSIONS", "1000"))
DIMENSIONS = 1536
TARGET_MS = 100.0
QUERIES = ("migration", "fix the flaky test", "websocket reconnect", "quasar lighthouse", "config loader timeout")
_WORD = re.compile(r"[a-z0-9]+")


class StandInEmbeddings:
    """A hashed bag of words, timed: ``seconds`` is the time spent embedding."""

    model = "stand-in-1536"

    def __init__(self) -> None:
        self.seconds = 0.0
        self.requests = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = []
        for text in texts:
            vector = [0.0] * DIMENSIONS
            for word in _WORD.findall(text.lower()):
                vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest()) % DIMENSIONS] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        self.requests += 1
        self.texts += len(texts)
        self.seconds += time.perf_counter() - started
        return vectors


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("search.db"))


def run() -> list[dict[str, Any]]:
    from builtin_tools.recall import RecallInput, RecallTool
    from loom_engine.execution import CancelToken
    from loom_engine.index.session_index import SessionIndex
    from loom_engine.tools.base import ToolContext, ToolSessionState
    from loom_engine.workspace import Workspace

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        project = base / "repo"
        project.mkdir()
        ctx = ToolContext(workspace=Workspace.at(project), cancel=CancelToken(), state=ToolSessionState())
        write_sessions(base / "sessions", SESSIONS, projects=(str(ctx.workspace.root),))
        index = SessionIndex(base / "index" / "search.db", base / "sessions")
        index.catch_up()
        words_size = _size(index.db_path.parent)

        def recall(tool: RecallTool, query: str) -> float:
            """Loom's own milliseconds for one recall (the stand-in endpoint's left out)."""
            spent = tool.embeddings.seconds if isinstance(tool.embeddings, StandInEmbeddings) else 0.0
            started = time.perf_counter()
            output = asyncio.run(tool.run(RecallInput(query=query), ctx))
            if output.is_error:
                raise RuntimeError(output.content)
            after = tool.embeddings.seconds if isinstance(tool.embeddings, StandInEmbeddings) else 0.0
            return (time.perf_counter() - started - (after - spent)) * 1000

        by_words = RecallTool(index=index)
        words_ms = [recall(by_words, query) for _ in range(3) for query in QUERIES]

        embeddings = StandInEmbeddings()
        by_meaning = RecallTool(embeddings, index=index)
        first_ms = recall(by_meaning, "quasar lighthouse")
        first_texts, first_requests, first_embed_s = embeddings.texts - 1, embeddings.requests - 1, embeddings.seconds
        recalls = 1
        while index.embed_sessions(str(ctx.workspace.root), embeddings.embed, embeddings.model).exchanges:
            recalls += 1  # what the next recalls would embed, one budget each
        meaning_ms = [recall(by_meaning, query) for _ in range(3) for query in QUERIES]
        vectors_size = _size(index.db_path.parent)
        total = embeddings.texts - len(QUERIES) * 3 - 1
        label = f"{SESSIONS:,} sessions of one project"
        return [
            row(f"recall by words ({label}) median", median(words_ms), "ms", f"< {TARGET_MS:g} ms",
                median(words_ms) < TARGET_MS),
            row("recall by words p95", quantiles(words_ms, n=20)[-1], "ms"),
            row(f"first recall by meaning: exchanges embedded (of {total:,})", float(first_texts), "exchanges"),
            row("first recall by meaning: requests to the endpoint", float(first_requests), "requests"),
            row("first recall by meaning, Loom's own time (endpoint left out)", first_ms, "ms"),
            row("first recall: the stand-in endpoint's time (1,536-dim hashing)", first_embed_s * 1000, "ms"),
            row("recalls until every exchange has its vector", float(recalls), "recalls"),
            row(f"recall by meaning, all {total:,} vectors present, median", median(meaning_ms), "ms",
                f"< {TARGET_MS:g} ms", median(meaning_ms) < TARGET_MS),
            row("recall by meaning p95", quantiles(meaning_ms, n=20)[-1], "ms"),
            row("index size: words only -> with vectors", f"{words_size / 1e6:.1f} -> {vectors_size / 1e6:.1f}", "MB"),
        ]
