"""recall: look something up in what Loom remembers — the project's long-term memory
files and the user's earlier sessions of this project. Read-only.

Ranked by words (bm25, the session search index) by default. When the user configured an
embeddings endpoint (``[memory] embeddings_url``, an OpenAI-compatible ``/v1/embeddings``),
memory files are ranked by meaning, and past sessions by words and meaning fused (each
exchange of a session embedded lazily, a few hundred per recall: see
``loom_engine.index.session_vectors``); the vectors are kept in the same index file. If
the endpoint fails, recall still answers, by words.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, Field

from loom_engine.memory.entries import Scope
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

if TYPE_CHECKING:  # sqlite3 and the index load at the first recall, not at start-up
    from loom_engine.index.session_index import SessionIndex

MAX_OUTPUT_CHARS = 6000
# By meaning, this many sessions of each ranking (words, meaning) are fused into one.
FUSED_DEPTH = 20


class EmbeddingsClient(Protocol):
    """What recall needs of an embeddings endpoint: its model's name, and a batch embedded."""

    @property
    def model(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class Embeddings:
    """An OpenAI-compatible embeddings endpoint (``base_url`` ends in ``/v1``)."""

    base_url: str
    model: str
    api_key: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from openai import OpenAI

        client = OpenAI(base_url=self.base_url, api_key=self.api_key or "none", max_retries=1, timeout=30.0)
        answer = client.embeddings.create(model=self.model, input=list(texts))
        return [list(item.embedding) for item in sorted(answer.data, key=lambda item: item.index)]


class RecallInput(BaseModel):
    query: str = Field(min_length=1, description="What to look for, in a few words.")
    limit: int = Field(5, ge=1, le=20, description="At most this many of each kind.")


class RecallTool(BaseTool[RecallInput]):
    name = "recall"
    description = (
        "Look something up in what you remember of this project: its memory files (/memories, kept across "
        "sessions) and the user's earlier sessions here, best match first. Use it before asking the user something "
        "an earlier session may have settled. Read a memory file whole with the memory tool's view.")
    input_model = RecallInput
    is_concurrency_safe = True
    is_read_only = True
    guidance = "recall searches this project's memory files and earlier sessions."

    def __init__(self, embeddings: EmbeddingsClient | None = None, index: SessionIndex | None = None) -> None:
        self.embeddings = embeddings
        self._index = index  # None: the user's own index, found when first used

    async def run(self, args: RecallInput, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._recall, args, ctx)

    def _recall(self, args: RecallInput, ctx: ToolContext) -> ToolOutput:
        import sqlite3

        from loom_engine.index.schema import IndexUnusable
        from loom_engine.index.session_index import SessionIndex
        from loom_engine.memory.entries import MemoryOperationError

        index = self._index or SessionIndex.for_user()
        parts: list[str] = []
        try:
            query_vector, failed = self._query_vector(args.query)
            parts += self._memory_files(index, args, ctx, query_vector)
            parts += self._sessions(index, args, ctx, query_vector)
        except (sqlite3.Error, OSError, IndexUnusable, MemoryOperationError) as error:
            return ToolOutput(f"recall failed: {type(error).__name__}: {error}", is_error=True)
        if failed:
            parts.insert(0, f"(The embeddings endpoint failed: {failed}; ranked by words only.)")
        text = "\n".join(parts)
        return ToolOutput(text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n… (cut)")

    def _query_vector(self, query: str) -> tuple[list[float] | None, str]:
        """The query's unit vector when an endpoint is configured, and why not when it failed."""
        if self.embeddings is None:
            return None, ""
        from loom_engine.index.vectors import unit

        try:
            return unit(self.embeddings.embed([query])[0]), ""
        except _endpoint_failures() as error:
            return None, f"{type(error).__name__}: {error}"

    def _memory_files(self, index: SessionIndex, args: RecallInput, ctx: ToolContext,
                      query_vector: list[float] | None) -> list[str]:
        from loom_engine.index.memory_rows import search_memory, search_memory_by_meaning, sync_memory
        from loom_engine.memory.folder import MemoryFolder

        store = (ctx.memory_scopes or {}).get(Scope.GLOBAL)
        if not isinstance(store, MemoryFolder):
            return []
        project = str(store.root)
        sync_memory(index.db_path, index.lock_path, project, store.list(), store.entries_dir)
        hits = None
        if self.embeddings is not None and query_vector is not None:
            try:
                hits = search_memory_by_meaning(index.db_path, index.lock_path, query_vector, project,
                                                self.embeddings.embed, self.embeddings.model, limit=args.limit)
                how = "by meaning"
            except _endpoint_failures():
                hits = None  # its files are still found by words
        if hits is None:
            hits = search_memory(index.db_path, args.query, project, limit=args.limit)
            how = "by words"
        if not hits:
            return [f"No memory file matches {args.query!r}."]
        return [f"Memory files ({how}):", *(f"- /memories/{hit.path}: {hit.marked_snippet()}" for hit in hits)]

    def _sessions(self, index: SessionIndex, args: RecallInput, ctx: ToolContext,
                  query_vector: list[float] | None) -> list[str]:
        from loom_engine.index.session_vectors import fuse

        from .session_search import render_hits

        exclude = (ctx.session_id,) if ctx.session_id else ()
        project = str(ctx.workspace.root)
        by_meaning = self.embeddings is not None and query_vector is not None
        sessions = index.search(args.query, project=project, limit=FUSED_DEPTH if by_meaning else args.limit,
                                exclude=exclude)
        lines: list[str] = []
        if self.embeddings is not None and query_vector is not None:
            try:
                progress = index.embed_sessions(project, self.embeddings.embed, self.embeddings.model)
            except _endpoint_failures() as error:
                lines.append(f"(Embedding earlier sessions failed: {type(error).__name__}: {error}.)")
                progress = None
            near = index.nearest(query_vector, self.embeddings.model, project, exclude=exclude, limit=FUSED_DEPTH)
            sessions = fuse(sessions, near, args.limit)
            lines.insert(0, "Earlier sessions (by words and meaning):")
            if progress is not None and progress.behind:
                lines.append(f"({progress.behind} session{'s' if progress.behind != 1 else ''} of this project not "
                             "embedded yet: found by words only until a later recall embeds them.)")
        if not sessions:
            return [*lines, f"No earlier session of this project matches {args.query!r}."]
        return [*lines, render_hits(sessions, args.query, "this project")]


def _endpoint_failures() -> tuple[type[Exception], ...]:
    """What a call to the embeddings endpoint raises when it fails (or answers nonsense)."""
    from openai import OpenAIError

    return (OpenAIError, ValueError)
