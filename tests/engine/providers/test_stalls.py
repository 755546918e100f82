"""Stalled streams and oversized requests, through the real SDKs and the fake server.

A server that accepts a request and never answers, or goes quiet mid-answer, must not
hold the run for the SDK's 10-minute read timeout: after the first-event or idle
timeout the attempt counts as a dropped stream and is retried. A 413 (the API's or a
proxy's) is reported as a request that is too large, once, without retrying.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from loom_engine.execution import CancelToken
from loom_engine.messages import Message
from loom_engine.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    StreamCompleted,
    StreamStalled,
    StreamText,
    StreamTimeouts,
)
from loom_engine.providers.retry import RetryNotice, RetryPolicy, stream_with_retries
from loom_engine.providers.sdk_stream import client_options
from loom_engine.providers.stall_watch import SseLineStarts
from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall
from tests.engine.providers.helpers import failure

FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.01, jitter=0.0)
# For a server that does answer: what a healthy stream must never be taken for a stall
# under, with room for a loaded machine (the fake server is a thread of this process).
ROOMY = StreamTimeouts(first_event_s=2.0, idle_s=2.0)
# Quick to call a stream stalled, with room for the request to reach the server first.
SLOW_START = StreamTimeouts(first_event_s=2.0, idle_s=0.3)
KINDS = ["anthropic", "openai"]


def req(kind: str) -> ProviderRequest:
    return ProviderRequest(model="claude-haiku-4-5" if kind == "anthropic" else "gpt-4o", system="sys",
                           messages=(Message.user("hi"),))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_that_never_answers_times_out_before_the_first_byte(
        kind: str, fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply.silent())
    started = time.monotonic()
    # A first-event timeout roomy enough for the request to reach the server on a loaded
    # machine: the hang-up checked below is the server's view of a request it holds.
    events, err = await failure(make(kind, SLOW_START), req(kind))
    # The stall timeout (2 s) ended it, not the SDK's 65 s read timeout; the bound is
    # loose because a loaded machine (and the SDK's first import) adds seconds.
    assert time.monotonic() - started < 45
    assert isinstance(err, StreamStalled) and err.kind == "timeout" and err.retryable
    assert events == [] and err.partial_output is False
    assert "did not answer within 2 s of sending the request" in err.message and "\n" not in err.message
    # The connection is closed, not left hanging on the server.
    assert await asyncio.to_thread(fake_llm.wait_for_disconnects, 1)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_that_stalls_mid_answer_times_out(kind: str, fake_llm: FakeLLMServer,
                                                         make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply.stall("abcdefghijklmnopqrstuvwxyz", after=5, chunk_size=4))
    started = time.monotonic()
    events, err = await failure(make(kind, SLOW_START), req(kind))
    # The stall timeout (0.3 s) ended it, not the SDK's 65 s read timeout; the bound is
    # loose because a loaded machine (and the SDK's first import) adds seconds.
    assert time.monotonic() - started < 45
    assert "".join(e.text for e in events if isinstance(e, StreamText))  # some text had streamed
    assert isinstance(err, StreamStalled) and err.partial_output is True and err.retryable
    assert "went silent for 0.3 s in the middle of its answer" in err.message
    assert await asyncio.to_thread(fake_llm.wait_for_disconnects, 1)


@pytest.mark.parametrize("kind", KINDS)
async def test_stalls_are_retried_like_dropped_streams(kind: str, fake_llm: FakeLLMServer,
                                                       make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply.silent(), Reply.stall("lost words " * 5, after=5, chunk_size=4),
                     Reply.text("third time lucky"))
    events = [e async for e in stream_with_retries(make(kind, ROOMY), req(kind), FAST, CancelToken())]
    notices = [e for e in events if isinstance(e, RetryNotice)]
    assert [n.discard_partial for n in notices] == [False, True]
    assert "did not answer" in notices[0].reason and "went silent" in notices[1].reason
    after = events[events.index(notices[1]) + 1:]
    assert "".join(e.text for e in after if isinstance(e, StreamText)) == "third time lucky"
    assert isinstance(events[-1], StreamCompleted) and len(fake_llm.requests) == 3


async def test_the_run_ends_with_the_stall_once_retries_are_spent(fake_llm: FakeLLMServer,
                                                                  make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(*[Reply.silent()] * 3, Reply.text("never reached"))
    policy = RetryPolicy(max_retries=2, base_delay=0.001, jitter=0.0)
    seen: list[object] = []
    with pytest.raises(StreamStalled) as info:
        async for event in stream_with_retries(make("anthropic", SLOW_START), req("anthropic"), policy, CancelToken()):
            seen.append(event)
    assert [n.attempt for n in seen if isinstance(n, RetryNotice)] == [1, 2]
    assert len(fake_llm.requests) == 3
    assert info.value.message == (f"Anthropic at {fake_llm.anthropic_base_url} did not answer within 2 s "
                                  "of sending the request")


@pytest.mark.parametrize("kind", KINDS)
async def test_a_slow_steady_stream_is_not_a_stall(kind: str, fake_llm: FakeLLMServer,
                                                   make: Callable[..., Provider]) -> None:
    # Every gap (0.1 s) is far under the idle timeout though the whole answer takes longer
    # than it; a tool call's arguments stream as events that yield nothing upward.
    fake_llm.enqueue(Reply(text="slow but sure", tool_calls=(ToolCall("write_file", {"content": "x" * 100}),),
                           chunk_size=4, chunk_delay=0.1))
    provider = make(kind, ROOMY)
    started = time.monotonic()
    events = [e async for e in provider.stream(req(kind))]
    assert time.monotonic() - started > ROOMY.idle_s
    done = events[-1]
    assert isinstance(done, StreamCompleted)
    assert done.message.text == "slow but sure" and done.message.tool_uses[0].input == {"content": "x" * 100}


@pytest.mark.parametrize("kind", KINDS)
async def test_keep_alives_during_a_long_pause_are_signs_of_life(kind: str, fake_llm: FakeLLMServer,
                                                                make: Callable[..., Provider]) -> None:
    # The SDKs swallow pings and SSE comments, so no event arrives for 3 s, longer than the
    # idle timeout; the bytes of the keep-alives do, every 0.1 s, and the stream is not
    # taken for stalled.
    fake_llm.enqueue(Reply(text="after a long think", chunk_size=4, pause=(3, 3.0), keepalive_every=0.1))
    events = [e async for e in make(kind, StreamTimeouts(first_event_s=2.0, idle_s=1.0)).stream(req(kind))]
    done = events[-1]
    assert isinstance(done, StreamCompleted) and done.message.text == "after a long think"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_long_pause_without_keep_alives_is_a_stall(kind: str, fake_llm: FakeLLMServer,
                                                           make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply(text="after a long think", chunk_size=4, pause=(3, 1.2)))
    _, err = await failure(make(kind, SLOW_START), req(kind))
    assert isinstance(err, StreamStalled) and "went silent for 0.3 s in the middle of its answer" in err.message


async def test_time_the_consumer_takes_between_events_is_not_counted(fake_llm: FakeLLMServer,
                                                                     make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply.text("abcdefgh", chunk_size=4))
    texts = []
    # Timeouts roomy enough for a loaded machine's own delays, and a consumer slower still.
    provider = make("anthropic", StreamTimeouts(first_event_s=3.0, idle_s=1.0))
    async for event in provider.stream(req("anthropic")):
        if isinstance(event, StreamText):
            texts.append(event.text)
            await asyncio.sleep(1.5)  # a slow consumer, well past the 1 s idle timeout
    assert "".join(texts) == "abcdefgh"


def test_the_sdk_read_timeout_follows_the_stall_timeouts_not_600_s() -> None:
    options = client_options("k", "http://127.0.0.1:1", None, StreamTimeouts(first_event_s=60, idle_s=30))
    timeout = options["timeout"]
    assert timeout.read == 65 and timeout.connect == 5
    assert client_options("k", "http://127.0.0.1:1", None)["timeout"].read == 95  # the default idle 90 s, + 5
    assert client_options("k", "http://127.0.0.1:1", 0.3)["timeout"] == 0.3  # an explicit timeout wins


def test_stream_timeouts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        StreamTimeouts(first_event_s=0)
    with pytest.raises(ValueError, match="positive"):
        StreamTimeouts(idle_s=-1)


# --- 413 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_a_413_from_a_proxy_is_reported_as_too_large_and_not_retried(
        kind: str, fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply.proxy_error(413, "Request Entity Too Large"), Reply.text("unused"))
    with pytest.raises(ProviderError) as info:
        async for _ in stream_with_retries(make(kind), req(kind), FAST, CancelToken()):
            pass
    err = info.value
    assert err.kind == "request_too_large" and not err.retryable and err.status == 413
    assert err.message == ("request too large (413 from the server or a proxy: 413 Request Entity Too Large); "
                           "try /compact, or send fewer or smaller files and images")
    assert len(fake_llm.requests) == 1


async def test_anthropics_own_413_is_worded_the_same(fake_llm: FakeLLMServer,
                                                     make: Callable[..., Provider]) -> None:
    fake_llm.enqueue(Reply.error(413, "Request exceeds the maximum size", type="request_too_large"))
    _, err = await failure(make("anthropic"), req("anthropic"))
    assert err.kind == "request_too_large"
    assert err.message.startswith("request too large (413 from the server or a proxy: Request exceeds the "
                                  "maximum size); try /compact")


async def test_the_idle_time_counts_from_when_the_consumer_waits_again(
        fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    """The server sends an event every 0.1 s (well within the 1 s idle limit) while the
    consumer spends 1.5 s on each piece of text. When it asks for the next event, the
    last byte is older than the limit, yet the server was never silent for 1 s: the
    wait, not the consumer's time, is what counts."""
    fake_llm.enqueue(Reply.text("abcdefghijkl", chunk_size=4, chunk_delay=0.1))
    provider = make("anthropic", StreamTimeouts(first_event_s=3.0, idle_s=1.0))
    texts = []
    async for event in provider.stream(req("anthropic")):
        if isinstance(event, StreamText):
            texts.append(event.text)
            await asyncio.sleep(1.5)
    assert "".join(texts) == "abcdefghijkl"


# --- keep-alives before the answer (llama-server reading a long prompt) ----------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_keep_alive_comments_before_the_answer_hold_the_first_event_clock(
        kind: str, fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    """llama-server sends a ``: `` comment every period (here 1 s, longer than the idle
    limit, as its ~30 s was against the old 30 s) while it reads a long prompt, and
    answers after longer than the first-event limit. Each comment restarts the
    first-event clock (three periods long); the idle clock never runs before the answer
    starts, and the answer arrives without a retry."""
    fake_llm.enqueue(Reply.slow_prompt("read it all", answer_after=4.0, keepalive_every=1.0),
                     Reply.text("a retry that must not happen"))
    provider = make(kind, StreamTimeouts(first_event_s=3.0, idle_s=0.6))
    events = [e async for e in stream_with_retries(provider, req(kind), FAST, CancelToken())]
    assert [e for e in events if isinstance(e, RetryNotice)] == []
    done = events[-1]
    assert isinstance(done, StreamCompleted) and done.message.text == "read it all"
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_keep_alives_then_silence_is_a_stall_that_says_so(
        kind: str, fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    # Two comments, then nothing: the connection is open, the answer never starts.
    fake_llm.enqueue(Reply.raw(b": keep-alive\n\n" * 2 + b"data: {}\n\n", chunk_size=14, stall_after=2))
    events, err = await failure(make(kind, StreamTimeouts(first_event_s=1.0, idle_s=30.0)), req(kind))
    assert isinstance(err, StreamStalled) and err.retryable and not err.partial_output and events == []
    where = f"Anthropic at {fake_llm.anthropic_base_url}" if kind == "anthropic" else fake_llm.openai_base_url
    assert err.message == f"{where} sent 2 keep-alives but no answer, then nothing at all for 1 s"


def test_the_default_idle_limit_sits_well_above_llama_servers_keep_alive_period() -> None:
    # llama-server: a comment every ~30 s, always a little after 30 s.
    assert StreamTimeouts().idle_s >= 2 * 31


def test_the_start_of_the_answer_is_found_across_chunk_boundaries() -> None:
    lines = SseLineStarts()
    assert lines.feed(b": keep") == 0 and not lines.data_seen
    assert lines.feed(b"-alive\r\n\r\n:") == 1 and not lines.data_seen
    assert lines.feed(b" ping\n\nevent: message_start\nda") == 1 and not lines.data_seen
    lines.feed(b"ta: {\"type\"")
    assert lines.data_seen
