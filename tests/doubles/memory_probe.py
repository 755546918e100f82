"""A tool that works on the memory scopes its call is given, for engine tests of an
agent tree's memory before (and apart from) the real ``memory`` tool.

``note`` writes, appends to, reads and lists entries of one scope; ``append`` reads,
lets other tasks run, then writes back by compare-and-set and retries from the entry a
refusal carries — the way parallel agents race on a shared note. It keeps a weak
reference to every ``local`` store it was handed, so a test can see one is gone.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Literal

from pydantic import BaseModel

from loom_engine.memory.entries import MemoryOperationError, MemoryStore, Scope, StaleVersion
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput


class NoteInput(BaseModel):
    op: Literal["write", "append", "read", "list"]
    scope: Scope
    path: str = ""
    text: str = ""


class NoteTool(BaseTool[NoteInput]):
    name = "note"
    description = "Write, append to, read or list memory entries of one scope."
    input_model = NoteInput
    is_concurrency_safe = True
    session_only = True

    def __init__(self) -> None:
        self.local_stores: list[weakref.ref[MemoryStore]] = []
        self.refusals = 0  # appends refused as stale (and retried)

    async def run(self, args: NoteInput, ctx: ToolContext) -> ToolOutput:
        stores = ctx.memory_scopes or {}
        if Scope.LOCAL in stores:
            self.local_stores.append(weakref.ref(stores[Scope.LOCAL]))
        store = stores.get(args.scope)
        if store is None:
            return ToolOutput(f"no {args.scope} scope here", is_error=True)
        try:
            return await self._do(store, args)
        except MemoryOperationError as error:
            return ToolOutput(str(error), is_error=True)

    async def _do(self, store: MemoryStore, args: NoteInput) -> ToolOutput:
        if args.op == "read":
            entry = store.get(args.path)
            return ToolOutput(entry.content if entry is not None else f"(no {args.path})")
        if args.op == "list":
            return ToolOutput("\n".join(e.path for e in store.list(args.path)) or "(empty)")
        current = store.get(args.path)
        while True:
            if args.op == "append":
                await asyncio.sleep(0)  # the other writers read the same version meanwhile
            before = current.content if current is not None and args.op == "append" else ""
            try:
                store.put(args.path, before + args.text, expected=current.version if current is not None else None)
                return ToolOutput(f"wrote {args.path}")
            except StaleVersion as stale:
                if args.op != "append":
                    raise
                self.refusals += 1
                current = stale.current
