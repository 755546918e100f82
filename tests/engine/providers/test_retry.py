"""stream_with_retries: backoff, retry-after, partial output, giving up, cancellation."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Callable

import pytest

from loom_engine.execution import Cancelled, CancelToken
from loom_engine.messages import Message
from loom_engine.providers.base import (
    Provider,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    StreamCompleted,
    StreamText,
)
from loom_engine.providers.openai_provider import OpenAIProvider
from loom_engine.providers.retry import RetryNotice, RetryPolicy, parse_retry_after, stream_with_retries
from loom_engine.providers.scripted import ScriptedProvider
from tests.doubles.fake_llm import FakeLLMServer, Reply

FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.01, jitter=0.0)


def req(model: str = "claude-haiku-4-5") -> ProviderRequest:
    return ProviderRequest(model=model, system="sys", messages=(Message.user("hi"),))


async def drain(provider: Provider, request: ProviderRequest, policy: RetryPolicy = FAST,
                cancel: CancelToken | None = None) -> list[ProviderEvent | RetryNotice]:
    return [e async for e in stream_with_retries(provider, request, policy, cancel or CancelToken())]


# --- the policy -----------------------------------------------------------------------------


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=30.0, jitter=0.25)
    middle = [policy.delay(n, rng=lambda: 0.5) for n in range(1, 7)]
    assert middle == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert policy.delay(3, rng=lambda: 0.0) == 3.0  # 4 * 0.75
    assert policy.delay(3, rng=lambda: 1.0) == 5.0  # 4 * 1.25
    assert policy.delay(9, rng=lambda: 1.0) == 30.0  # never above max_delay
    assert policy.delay(2, retry_after=12.5) == 12.5  # the server's word wins


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    later = email.utils.formatdate(time.time() + 100, usegmt=True)
    seconds = parse_retry_after({"retry-after": later})
    assert seconds is not None and 90 < seconds <= 100
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


# --- recovering through the real SDKs -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_recovers_after_429_honouring_retry_after(kind: str, fake_llm: FakeLLMServer,
                                                         make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(Reply.error(429, retry_after="0.02"), Reply.text("made it"))
    events = await drain(make(kind), req())
    notices = [e for e in events if isinstance(e, RetryNotice)]
    assert len(notices) == 1
    assert notices[0].attempt == 1 and notices[0].delay_s == 0.02
    assert "rate limited" in notices[0].reason and notices[0].discard_partial is False
    assert isinstance(events[-1], StreamCompleted) and events[-1].message.text == "made it"
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize(("fault", "partial"), [
    (Reply.error(500), False),
    (Reply.error(529), False),
    (Reply.broken("lost text that streamed", after=4, chunk_size=4), True),
    (Reply.broken("never streamed", after=1), False),
])
async def test_recovers_after_fault(kind: str, fault: Reply, partial: bool, fake_llm: FakeLLMServer,
                                   make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(fault, Reply.text("second time lucky"))
    events = await drain(make(kind), req())
    notices = [e for e in events if isinstance(e, RetryNotice)]
    assert len(notices) == 1 and notices[0].discard_partial is partial
    after = events[events.index(notices[0]) + 1:]
    assert "".join(e.text for e in after if isinstance(e, StreamText)) == "second time lucky"
    assert isinstance(events[-1], StreamCompleted)


async def test_gives_up_after_max_retries_with_the_last_error(fake_llm: FakeLLMServer,
                                                             make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(*[Reply.error(529)] * 3, Reply.text("too late"))
    policy = RetryPolicy(max_retries=2, base_delay=0.001, jitter=0.0)
    seen: list[ProviderEvent | RetryNotice] = []
    with pytest.raises(ProviderError) as info:
        async for event in stream_with_retries(make("anthropic"), req(), policy, CancelToken()):
            seen.append(event)
    assert info.value.kind == "overloaded"
    assert [n.attempt for n in seen if isinstance(n, RetryNotice)] == [1, 2]
    assert len(fake_llm.requests) == 3


async def test_non_retryable_errors_are_raised_at_once(fake_llm: FakeLLMServer,
                                                       make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(Reply.error(401), Reply.text("unused"))
    seen: list[ProviderEvent | RetryNotice] = []
    with pytest.raises(ProviderError) as info:
        async for event in stream_with_retries(make("openai"), req("gpt-4o"), FAST, CancelToken()):
            seen.append(event)
    assert info.value.kind == "auth" and seen == [] and len(fake_llm.requests) == 1


async def test_an_unreachable_server_gets_only_a_couple_of_quick_retries(unused_tcp_port: int) -> None:
    provider = OpenAIProvider(api_key="k", base_url=f"http://127.0.0.1:{unused_tcp_port}/v1")
    seen: list[ProviderEvent | RetryNotice] = []
    policy = RetryPolicy(base_delay=0.001, jitter=0.0)  # default counts: 4 retries, 2 for connections
    try:
        with pytest.raises(ProviderError) as info:
            async for event in stream_with_retries(provider, req("gpt-4o"), policy, CancelToken()):
                seen.append(event)
    finally:
        await provider.aclose()
    assert info.value.kind == "connection" and "Connection refused" in info.value.message
    assert [n.attempt for n in seen if isinstance(n, RetryNotice)] == [1, 2]


def test_connection_retries_never_exceed_the_overall_limit() -> None:
    assert RetryPolicy(max_retries=1).retries_for("connection") == 1
    assert RetryPolicy().retries_for("connection") == 2
    assert RetryPolicy().retries_for("server") == 4


async def test_retry_after_beyond_the_limit_is_not_waited_for() -> None:
    provider = ScriptedProvider([{"error": {"kind": "rate_limit", "message": "wait an hour", "retry_after": 3600}},
                                 {"text": "unused"}])
    with pytest.raises(ProviderError) as info:
        await drain(provider, req())
    assert info.value.retry_after == 3600 and provider.calls == 1


# --- cancellation ---------------------------------------------------------------------------


async def test_cancel_during_backoff_stops_at_once() -> None:
    provider = ScriptedProvider([{"error": {"kind": "server", "message": "boom"}}, {"text": "unused"}])
    cancel = CancelToken()
    stream = stream_with_retries(provider, req(), RetryPolicy(base_delay=60.0, max_delay=60.0, jitter=0.0), cancel)
    notice = await stream.__anext__()
    assert isinstance(notice, RetryNotice) and notice.delay_s == 60.0
    asyncio.get_running_loop().call_soon(cancel.cancel)
    # The guard only turns a hang into a failure; cancellation must not wait out the 60 s.
    with pytest.raises(Cancelled):
        await asyncio.wait_for(stream.__anext__(), timeout=60)
    assert provider.calls == 1


class _Stuck:
    """Yields one delta, then waits forever; records whether its stream was closed."""

    name = "stuck"

    def __init__(self) -> None:
        self.closed = False

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        try:
            yield StreamText("thinking about it")
            await asyncio.Event().wait()
            yield StreamCompleted(Message.assistant(), "end_turn")
        finally:
            self.closed = True


async def test_cancel_during_a_stalled_stream_closes_it() -> None:
    provider = _Stuck()
    cancel = CancelToken()
    stream = stream_with_retries(provider, req(), FAST, cancel)
    assert await stream.__anext__() == StreamText("thinking about it")
    asyncio.get_running_loop().call_soon(cancel.cancel, "user pressed Esc")
    with pytest.raises(Cancelled) as info:
        await asyncio.wait_for(stream.__anext__(), timeout=60)
    assert str(info.value) == "user pressed Esc"
    assert provider.closed is True


async def test_cancel_during_a_slow_http_stream(fake_llm: FakeLLMServer,
                                                make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(Reply.text("a very slow answer " * 5, chunk_size=4, chunk_delay=0.2), Reply.text("next"))
    provider = make("anthropic")
    cancel = CancelToken()
    stream = stream_with_retries(provider, req(), FAST, cancel)
    first = await stream.__anext__()
    assert isinstance(first, StreamText)
    asyncio.get_running_loop().call_soon(cancel.cancel)
    with pytest.raises(Cancelled):
        await asyncio.wait_for(stream.__anext__(), timeout=60)
    # The HTTP response was closed (the server saw the client hang up) ...
    assert await asyncio.to_thread(fake_llm.wait_for_disconnects, 1)
    # ... and the provider stays usable for the next request.
    events = await drain(provider, req())
    assert isinstance(events[-1], StreamCompleted) and events[-1].message.text == "next"


async def test_already_cancelled_never_calls_the_provider() -> None:
    provider = ScriptedProvider([{"text": "unused"}])
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        await drain(provider, req(), cancel=cancel)
    assert provider.calls == 0
