"""GatedProvider: a provider whose streams wait at their end until the test lets them finish."""

from __future__ import annotations

from typing import Any


class GatedProvider:
    """A ScriptedProvider whose streams hold their last event until ``gate`` is set.

    Lets a test act "while the answer streams" without racing the stream's speed.
    """

    name = "scripted"

    def __init__(self, inner: Any) -> None:
        import asyncio

        self.inner = inner
        self.gate = asyncio.Event()

    async def stream(self, request: Any):  # type: ignore[no-untyped-def]
        from loom_engine.providers.base import StreamCompleted

        async for event in self.inner.stream(request):
            if isinstance(event, StreamCompleted):
                await self.gate.wait()
            yield event
