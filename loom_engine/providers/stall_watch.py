"""Noticing a model stream that has gone silent: the byte clock behind the stall timeouts.

A stream is stalled when no byte of its body has arrived for ``idle_s`` (or, before
the first one, for ``first_event_s`` since the request went out). Bytes, not parsed
events: the SDKs swallow the keep-alive pings a server sends during a long pause,
and a tool call's arguments stream as events that yield nothing upward, yet both show
the connection is alive. The clock is wound by the HTTP response body as it is read
(its ``stream`` is wrapped before the SDK starts reading), and by each SDK event as a
fallback for a response that could not be wrapped.

Only the waits are timed (:meth:`StallClock.watch` around each ``await``), so time a
consumer spends between two events never counts against the server.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from typing import Any

from .base import StreamStalled, StreamTimeouts


class StallClock:
    def __init__(self, limits: StreamTimeouts) -> None:
        self.limits = limits
        self._loop = asyncio.get_running_loop()
        self.deadline = self._loop.time() + limits.first_event_s
        self.heard = False  # a byte (or event) has arrived
        self._scope: asyncio.Timeout | None = None

    def touch(self) -> None:
        """Something arrived: the next ``idle_s`` are the server's again."""
        self.heard = True
        self.deadline = self._loop.time() + self.limits.idle_s
        if self._scope is not None:
            try:
                self._scope.reschedule(self.deadline)
            except RuntimeError:  # the scope has already expired; its timeout stands
                pass

    def watch(self) -> _Watch:
        """``async with clock.watch(): await ...`` - raises TimeoutError past the deadline."""
        return _Watch(self)

    def stalled(self, where: str, partial_output: bool) -> StreamStalled:
        if self.heard:
            return StreamStalled(f"the stream from {where} stalled: nothing arrived for {self.limits.idle_s:g} s",
                                 partial_output=partial_output)
        return StreamStalled(f"{where} did not answer within {self.limits.first_event_s:g} s",
                             partial_output=partial_output)


class _Watch:
    def __init__(self, clock: StallClock) -> None:
        self._clock = clock
        deadline = clock.deadline
        if clock.heard:
            # The server gets its idle time counted from when this wait starts: the
            # consumer may have spent longer than that on the last event, and the next
            # bytes may already be waiting in a buffer, only a suspension away.
            deadline = max(deadline, clock._loop.time() + clock.limits.idle_s)
        self._scope = asyncio.timeout_at(deadline)

    async def __aenter__(self) -> None:
        await self._scope.__aenter__()
        self._clock._scope = self._scope

    async def __aexit__(self, *exc_info: Any) -> None:
        self._clock._scope = None
        await self._scope.__aexit__(*exc_info)  # raises TimeoutError when it expired


def wind_with_body(sdk_stream: Any, clock: StallClock) -> bool:
    """Make every chunk of ``sdk_stream``'s HTTP body wind ``clock``; False when the
    SDK object offers no unread httpx response to wrap (events then wind it alone)."""
    import httpx2

    response = getattr(sdk_stream, "response", None)
    if not isinstance(response, httpx2.Response) or response.is_stream_consumed:
        return False
    body = response.stream
    if not isinstance(body, httpx2.AsyncByteStream):
        return False
    response.stream = _winding_body_class()(body, clock)
    return True


@functools.cache
def _winding_body_class() -> type:
    """Built on first use: importing this module must not load httpx2 (Loom starts
    without the SDKs)."""
    import httpx2

    class WindingBody(httpx2.AsyncByteStream):
        def __init__(self, inner: Any, clock: StallClock) -> None:
            self._inner = inner
            self._clock = clock

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                if chunk:
                    self._clock.touch()
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return WindingBody

