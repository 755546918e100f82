"""Noticing a model stream that has gone silent: the clock behind the stall timeouts.

Two clocks, one after the other. Until the answer starts (its first SSE ``data:``
line), the server may stay silent for ``first_event_s``: long enough for a slow model
to read a long prompt. Keep-alives it sends meanwhile (llama-server writes a ``: ``
comment line every ~30 s while it processes a prompt) show it is still working, so each
one restarts that same clock - it never switches to the idle clock, which is meant for
gaps inside an answer. Once the answer has started, no byte may be more than ``idle_s``
after the last one; keep-alives count as bytes there too (an Anthropic ``ping`` during
a long pause).

Bytes, not parsed events, wind the clock: the SDKs swallow comments and pings, and a
tool call's arguments stream as events that yield nothing upward, yet all show the
connection is alive. The HTTP response body is wrapped before the SDK starts reading it;
each SDK event winds the clock too, as a fallback for a response that could not be wrapped.

Only the waits are timed (:meth:`StallClock.watch` around each ``await``), so time a
consumer spends between two events never counts against the server.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator
from typing import Any

from .base import StreamStalled, StreamTimeouts


class StallClock:
    def __init__(self, limits: StreamTimeouts) -> None:
        self.limits = limits
        self._loop = asyncio.get_running_loop()
        self.deadline = self._loop.time() + limits.first_event_s
        self.heard = False  # the answer has started (a data event arrived)
        self.keep_alives = 0  # comment lines received before the answer started
        self._scope: asyncio.Timeout | None = None

    def touch(self) -> None:
        """Part of the answer arrived: the next ``idle_s`` are the server's again."""
        self.heard = True
        self._move_deadline(self.limits.idle_s)

    def keep_alive(self, comments: int) -> None:
        """Bytes that are not yet the answer (keep-alive comments): the server is working
        on the request, so its time to start answering begins again."""
        if self.heard:
            self.touch()
            return
        self.keep_alives += comments
        self._move_deadline(self.limits.first_event_s)

    def _move_deadline(self, seconds: float) -> None:
        self.deadline = self._loop.time() + seconds
        if self._scope is not None:
            try:
                self._scope.reschedule(self.deadline)
            except RuntimeError:  # the scope has already expired; its timeout stands
                pass

    def watch(self) -> _Watch:
        """``async with clock.watch(): await ...`` - raises TimeoutError past the deadline."""
        return _Watch(self)

    def stalled(self, where: str, partial_output: bool) -> StreamStalled:
        """What happened, in words that are true: silent from the start, silent after
        keep-alives, or silent in the middle of an answer."""
        if self.heard:
            message = f"the stream from {where} went silent for {self.limits.idle_s:g} s in the middle of its answer"
        elif self.keep_alives:
            count = f"{self.keep_alives} keep-alive" + ("s" if self.keep_alives != 1 else "")
            message = (f"{where} sent {count} but no answer, then nothing at all for "
                       f"{self.limits.first_event_s:g} s")
        else:
            message = f"{where} did not answer within {self.limits.first_event_s:g} s of sending the request"
        return StreamStalled(message, partial_output=partial_output)


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


_LINE_END = re.compile(rb"\r\n|\r|\n")
# Enough of a line's start to tell ``data:`` from a comment (``:``) or a field name.
_PREFIX = len(b"data:")


class SseLineStarts:
    """Reads the starts of an SSE body's lines, chunk by chunk (a line may span chunks),
    until the first ``data:`` line: what arrived before the answer began."""

    def __init__(self) -> None:
        self._partial = b""  # the start of a line whose end has not arrived yet
        self.data_seen = False

    def feed(self, chunk: bytes) -> int:
        """The comment lines ``chunk`` completes before any data line; sets ``data_seen``
        once a line starting ``data:`` has arrived (complete or not)."""
        lines = _LINE_END.split(self._partial + chunk)
        last = lines.pop()
        comments = 0
        for line in lines:
            if line.startswith(b"data:"):
                self.data_seen = True
                return comments
            if line.startswith(b":"):
                comments += 1
        if last.startswith(b"data:"):
            self.data_seen = True
        # Only a line's start matters; the rest of a long line need not be kept.
        self._partial = last[:_PREFIX]
        return comments


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
            self._before_answer: SseLineStarts | None = SseLineStarts()

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                if chunk:
                    self._wind(chunk)
                yield chunk

        def _wind(self, chunk: bytes) -> None:
            scanner = self._before_answer
            if scanner is None:
                self._clock.touch()
                return
            comments = scanner.feed(chunk)
            if scanner.data_seen:
                self._before_answer = None
                self._clock.touch()
            else:
                self._clock.keep_alive(comments)

        async def aclose(self) -> None:
            await self._inner.aclose()

    return WindingBody
