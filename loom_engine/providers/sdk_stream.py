"""The part of streaming that both SDK adapters share: relay, map errors, close."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Protocol

from .base import ProviderError, ProviderEvent, StreamCompleted


class Accumulator(Protocol):
    has_output: bool

    def feed(self, raw: Any) -> Iterable[ProviderEvent]: ...

    def completed(self) -> StreamCompleted: ...


async def relay(open_stream: Callable[[], Awaitable[Any]], acc: Accumulator, *, finished: Callable[[], bool],
                map_error: Callable[[Exception, bool], ProviderError | None],
                incomplete: str) -> AsyncIterator[ProviderEvent]:
    """Yield ``acc``'s events for every raw SDK event, then the completed message.

    SDK and transport failures become ProviderErrors (``map_error`` gets whether output
    had already streamed); the SDK stream is always closed, which closes the HTTP
    response when the caller stops early or is cancelled.
    """
    sdk_stream: Any = None
    try:
        sdk_stream = await open_stream()
        async for raw_event in sdk_stream:
            for event in acc.feed(raw_event):
                yield event
    except ProviderError:
        raise
    except Exception as exc:  # SDK, transport and decoding failures
        mapped = map_error(exc, acc.has_output)
        if mapped is None:
            raise
        raise mapped from exc
    finally:
        if sdk_stream is not None:
            await sdk_stream.close()
    if not finished():
        raise ProviderError("stream_broken", incomplete, partial_output=acc.has_output)
    yield acc.completed()
