"""Telling a usage limit from a rate limit, through the real SDKs against the fake server:
Anthropic's unified limit headers and OpenAI's quota errors make a ``usage_limit`` with
its reset time, which the retry loop does not retry and the breaker does not count; a
plain 429 (with the request/token rate-limit headers) is still retried as before."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from loom_engine.execution import CancelToken
from loom_engine.messages import Message
from loom_engine.providers.base import Provider, ProviderError, ProviderRequest, StreamCompleted
from loom_engine.providers.breaker import CircuitBreaker
from loom_engine.providers.retry import RetryNotice, RetryPolicy, stream_with_retries
from loom_engine.providers.usage_limit import UsageLimit, anthropic_usage_limit, openai_usage_limit
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.engine.providers.helpers import failure

FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.01, jitter=0.0)


def req(model: str = "claude-haiku-4-5") -> ProviderRequest:
    return ProviderRequest(model=model, system="sys", messages=(Message.user("hi"),))


# --- reading what the servers say ---------------------------------------------------------------


def test_anthropic_headers_rejected_windows_and_their_reset() -> None:
    u = "anthropic-ratelimit-unified-"
    headers = {f"{u}status": "rejected", f"{u}reset": "1800000000",
               f"{u}5h-status": "rejected", f"{u}5h-reset": "1799999000"}
    assert anthropic_usage_limit(headers) == UsageLimit(1800000000.0, "5-hour")
    # Without the overall reset: the latest of the spent windows' resets.
    both = {f"{u}5h-status": "rejected", f"{u}5h-reset": "100",
            f"{u}7d_opus-status": "rejected", f"{u}7d_opus-reset": "900"}
    assert anthropic_usage_limit(both) == UsageLimit(900.0, "5-hour and weekly")
    # Only retry-after: it says when.
    only_status = {"anthropic-ratelimit-unified-status": "rejected"}
    assert anthropic_usage_limit(only_status, 30.0, now=lambda: 1000.0) == UsageLimit(1030.0, "")
    assert anthropic_usage_limit(only_status) == UsageLimit(None, "")


@pytest.mark.parametrize("headers", [
    {},
    {"anthropic-ratelimit-unified-status": "allowed_warning", "anthropic-ratelimit-unified-5h-status": "allowed"},
    {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-11-26T20:00:00Z"},
])
def test_anthropic_rate_limits_are_not_usage_limits(headers: dict[str, str]) -> None:
    assert anthropic_usage_limit(headers, 5.0) is None


def test_openai_quota_codes() -> None:
    assert openai_usage_limit("insufficient_quota", "insufficient_quota", {}) == UsageLimit(None, "account quota")
    assert openai_usage_limit("", "usage_limit_reached", {"resets_at": 1_800_000_000}) == UsageLimit(1.8e9, "")
    assert openai_usage_limit("", "usage_limit_reached", {"resets_in_seconds": 60}, now=lambda: 10.0) == \
        UsageLimit(70.0, "")
    assert openai_usage_limit("rate_limit_exceeded", "requests", {}) is None


# --- through the SDKs -------------------------------------------------------------------------


async def test_anthropic_unified_429_is_a_usage_limit_with_its_reset(
        fake_llm: FakeLLMServer, make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=7200))
    _, err = await failure(make("anthropic"), req())
    assert err.kind == "usage_limit" and not err.retryable
    assert err.resets_at == pytest.approx(time.time() + 7200, abs=30)
    assert err.message.startswith("Anthropic usage limit reached (the 5-hour limit) (429 rate_limit_error: ")


async def test_openai_insufficient_quota_is_a_usage_limit(fake_llm: FakeLLMServer,
                                                          make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(Reply.quota_exhausted())
    _, err = await failure(make("openai"), req("gpt-4o"))
    assert err.kind == "usage_limit" and err.resets_at is None and not err.retryable
    assert "usage limit reached (the account quota limit)" in err.message and "current quota" in err.message


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_a_usage_limit_is_sent_once_and_the_breaker_sees_an_answer(
        kind: str, fake_llm: FakeLLMServer, make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=60) if kind == "anthropic" else Reply.quota_exhausted())
    breaker = CircuitBreaker(kind)
    breaker.failed(await breaker.admit(CancelToken()), ProviderError("connection", "down"))
    with pytest.raises(ProviderError) as raised:
        async for _ in stream_with_retries(make(kind), req("gpt-4o" if kind == "openai" else "claude-haiku-4-5"),
                                           FAST, CancelToken(), breaker=breaker):
            pass
    assert raised.value.kind == "usage_limit"
    assert len(fake_llm.requests) == 1
    assert breaker.consecutive_failures == 0 and breaker.state == "closed"


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_a_plain_rate_limit_is_still_retried(kind: str, fake_llm: FakeLLMServer,
                                                   make: Callable[[str], Provider]) -> None:
    rate_headers = ({"anthropic-ratelimit-unified-status": "allowed", "anthropic-ratelimit-requests-remaining": "0"}
                    if kind == "anthropic" else
                    {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"})
    fake_llm.enqueue(Reply.error(429, retry_after="0.02", headers=rate_headers), Reply.text("made it"))
    events = [e async for e in stream_with_retries(make(kind), req("gpt-4o" if kind == "openai" else
                                                                   "claude-haiku-4-5"), FAST, CancelToken())]
    notices = [e for e in events if isinstance(e, RetryNotice)]
    assert [n.kind for n in notices] == ["rate_limit"]
    assert isinstance(events[-1], StreamCompleted) and len(fake_llm.requests) == 2
