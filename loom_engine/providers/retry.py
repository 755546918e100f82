"""Retrying a provider stream: exponential backoff with jitter, retry-after, cancellation.

The SDK clients are built with ``max_retries=0``; retrying happens here so the UI can
be told about every attempt (a :class:`RetryNotice` before each backoff sleep) and so a
stream that broke after partial output is retried as a whole, with the UI told to drop
what it had shown of the failed attempt.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass

from ..execution import Cancelled, CancelToken
from .base import (
    Provider,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    StreamText,
    StreamThinking,
    StreamToolUseStart,
)
from .breaker import CircuitBreaker


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0
    # Each backoff delay is scaled by a random factor in [1 - jitter, 1 + jitter] so
    # that many clients failing together do not retry in lockstep.
    jitter: float = 0.25
    # A server asking for a longer pause than this is not waited for: the error is
    # raised at once (waiting silently for minutes helps nobody).
    max_retry_after: float = 120.0
    # A server that cannot be reached at all (refused, unknown host) is most often not
    # running - a local model server - or a wrong URL: a couple of quick retries cover
    # a blip without keeping the user waiting the whole backoff before saying so.
    max_connection_retries: int = 2

    def retries_for(self, kind: str) -> int:
        return min(self.max_retries, self.max_connection_retries) if kind == "connection" else self.max_retries

    def delay(self, attempt: int, retry_after: float | None = None,
              rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return retry_after
        raw = min(self.max_delay, self.base_delay * (2.0 ** (attempt - 1)))
        if self.jitter > 0:
            raw *= 1 - self.jitter + 2 * self.jitter * rng()
        return max(0.0, min(raw, self.max_delay))


@dataclass(frozen=True)
class RetryNotice:
    """Yielded before each backoff sleep."""

    attempt: int  # 1-based number of the retry about to happen
    delay_s: float
    reason: str
    # Output of the failed attempt had already streamed; the UI must drop it.
    discard_partial: bool = False
    # The failure's kind (stream_broken, rate_limit...), for the UI to word it, and how
    # many attempts there will be at most, the first request included.
    kind: str = ""
    max_attempts: int = 0


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


_OUTPUT_EVENTS = (StreamText, StreamThinking, StreamToolUseStart)


async def stream_with_retries(
    provider: Provider,
    request: ProviderRequest,
    policy: RetryPolicy,
    cancel: CancelToken,
    *,
    rng: Callable[[], float] = random.random,
    breaker: CircuitBreaker | None = None,
) -> AsyncIterator[ProviderEvent | RetryNotice]:
    """Stream ``request``, retrying retryable failures according to ``policy``.

    Raises :class:`Cancelled` as soon as ``cancel`` fires (during the stream or a
    backoff sleep) and the last :class:`ProviderError` once retries are exhausted.
    With a ``breaker`` (the endpoint's, shared with other agents), every attempt asks
    it first and reports its outcome to it; once it is open, :class:`CircuitOpen` is
    raised instead of sending anything or waiting out the backoff.
    """
    attempt = 0
    while True:
        cancel.raise_if_cancelled()
        admission = await breaker.admit(cancel) if breaker is not None else None
        streamed = False
        # Whether the breaker was told this attempt's outcome (the first event is an answer).
        reported = False
        failure: ProviderError | None = None
        stream = provider.stream(request)
        events = _cancellable(stream, cancel)
        try:
            async for event in events:
                if not reported and breaker is not None and admission is not None:
                    breaker.answered(admission)
                    reported = True
                if isinstance(event, _OUTPUT_EVENTS):
                    streamed = True
                yield event
            return
        except ProviderError as err:
            failure = err
        finally:
            await events.aclose()
            await _close(stream)
            # Aborted (or closed by the consumer) before any outcome: it counts for nothing.
            if breaker is not None and admission is not None and not reported and \
                    (failure is None or cancel.cancelled):
                breaker.withdrawn(admission)
                reported = True
        # A failure that raced with an abort is not worth retrying.
        cancel.raise_if_cancelled()
        if breaker is not None and admission is not None:
            breaker.failed(admission, failure)
        if not failure.retryable or attempt >= policy.retries_for(failure.kind):
            raise failure
        if failure.retry_after is not None and failure.retry_after > policy.max_retry_after:
            raise failure
        # Retries left, but the endpoint is down (this failure or others' tripped the
        # breaker): say so now rather than after a backoff that would end the same way.
        if breaker is not None and breaker.state == "open":
            raise breaker.rejection() from failure
        attempt += 1
        delay = policy.delay(attempt, failure.retry_after, rng)
        yield RetryNotice(attempt=attempt, delay_s=delay, reason=failure.message,
                          discard_partial=streamed or failure.partial_output, kind=failure.kind,
                          max_attempts=policy.retries_for(failure.kind) + 1)
        await cancel.sleep(delay)


async def _close(stream: AsyncIterator[ProviderEvent]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


class _End:
    """Marks the end of a pumped stream; carries the exception that ended it, if any."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


async def _cancellable(stream: AsyncIterator[ProviderEvent],
                       cancel: CancelToken) -> AsyncGenerator[ProviderEvent, None]:
    """Events of ``stream``, abandoning it the moment ``cancel`` fires.

    One task drives the provider's stream for its whole life (HTTP clients expect a
    stream to be read and closed by the same task) and hands events over through a
    queue; firing the token cancels that task, which closes the stream. Events that
    are already available pass through without a trip round the event loop.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[ProviderEvent | _End] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in stream:
                queue.put_nowait(event)
        except BaseException as exc:  # handed to the reader, which re-raises it
            queue.put_nowait(_End(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            queue.put_nowait(_End())

    pumper = loop.create_task(pump())
    waiter = loop.create_task(cancel.wait())
    waiter.add_done_callback(lambda _: pumper.cancel())
    try:
        while True:
            item = queue.get_nowait() if not queue.empty() else await queue.get()
            if cancel.cancelled:
                raise Cancelled(cancel.reason)
            if isinstance(item, _End):
                if item.error is None:
                    return
                if isinstance(item.error, asyncio.CancelledError):
                    # Cancelled from outside (not by the token): propagate as such.
                    raise asyncio.CancelledError()
                raise item.error
            yield item
    finally:
        waiter.cancel()
        if not pumper.done():
            pumper.cancel()
        try:
            await pumper
        except BaseException:  # its outcome was already delivered (or is moot)
            pass
