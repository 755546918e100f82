"""recall: look something up in what Loom remembers — the project's long-term memory
files and the user's earlier sessions of this project. Read-only.

Ranked by words (bm25, the session search index) by default; memory files by meaning
when the user configured an embeddings endpoint (``[memory] embeddings_url``, an
OpenAI-compatible ``/v1/embeddings``), their vectors kept in the same index file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from loom_engine.memory.entries import Scope
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

if TYPE_CHECKING:  # sqlite3 and the index load at the first recall, not at start-up
    from loom_engine.index.session_index import SessionIndex

MAX_OUTPUT_CHARS = 6000


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

    def __init__(self, embeddings: Embeddings | None = None, index: SessionIndex | None = None) -> None:
        self.embeddings = embeddings
        self._index = index  # None: the user's own index, found when first used

    async def run(self, args: RecallInput, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._recall, args, ctx)

    def _recall(self, args: RecallInput, ctx: ToolContext) -> ToolOutput:
        import sqlite3

        from loom_engine.index.memory_rows import search_memory, search_memory_by_meaning, sync_memory
        from loom_engine.index.schema import IndexUnusable
        from loom_engine.index.session_index import SessionIndex
        from loom_engine.memory.entries import MemoryOperationError
        from loom_engine.memory.folder import MemoryFolder

        from .session_search import render_hits

        failures: tuple[type[Exception], ...] = (sqlite3.Error, OSError, IndexUnusable, MemoryOperationError)
        if self.embeddings is not None:
            from openai import OpenAIError

            failures += (OpenAIError,)
        index = self._index or SessionIndex.for_user()
        parts: list[str] = []
        store = (ctx.memory_scopes or {}).get(Scope.GLOBAL)
        try:
            if isinstance(store, MemoryFolder):
                project = str(store.root)
                sync_memory(index.db_path, index.lock_path, project, store.list(), store.entries_dir)
                if self.embeddings is not None:
                    hits = search_memory_by_meaning(index.db_path, index.lock_path, args.query, project,
                                                    self.embeddings.embed, self.embeddings.model, limit=args.limit)
                    how = "by meaning"
                else:
                    hits = search_memory(index.db_path, args.query, project, limit=args.limit)
                    how = "by words"
                if hits:
                    parts.append(f"Memory files ({how}):")
                    parts += [f"- /memories/{hit.path}: {hit.marked_snippet()}" for hit in hits]
                else:
                    parts.append(f"No memory file matches {args.query!r}.")
            exclude = (ctx.session_id,) if ctx.session_id else ()
            sessions = index.search(args.query, project=str(ctx.workspace.root), limit=args.limit, exclude=exclude)
        except failures as error:
            return ToolOutput(f"recall failed: {type(error).__name__}: {error}", is_error=True)
        if sessions:
            parts.append(render_hits(sessions, args.query, "this project"))
        else:
            parts.append(f"No earlier session of this project matches {args.query!r}.")
        text = "\n".join(parts)
        return ToolOutput(text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n… (cut)")
