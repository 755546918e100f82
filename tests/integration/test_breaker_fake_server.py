"""The circuit breaker against the fake server: four parallel sub-agents and a dead
endpoint send a bounded few requests, then each ends with one clear line; a probe after
the cool-down lets the next run recover; request errors and aborts never trip it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import AgentEvent, Error, Finished
from loom_engine.execution import Cancelled, CancelToken
from loom_engine.messages import Message
from loom_engine.parts import AgentParts
from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.base import Provider, ProviderError, ProviderEvent, ProviderRequest
from loom_engine.providers.breaker import BreakerPolicy, CircuitBreaker, CircuitBreakers, CircuitOpen
from loom_engine.providers.factory import create_provider
from loom_engine.providers.retry import RetryPolicy, stream_with_retries
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply, free_port

# Backoff waits of a millisecond: the counts are what matters, not the pacing.
FAST_RETRIES = RetryPolicy(base_delay=0.001, max_delay=0.001, jitter=0.0)
OPEN_LINE = "the anthropic server is not answering"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def provider(fake_llm: FakeLLMServer) -> AsyncIterator[Provider]:
    made = AnthropicProvider(api_key="test", base_url=fake_llm.anthropic_base_url)
    yield made
    await made.aclose()


def _parent(workspace: Path, server: FakeLLMServer, breakers: CircuitBreakers) -> Agent:
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    parts = AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(workspace),
                       retry_policy=FAST_RETRIES, breakers=breakers)
    return Agent(AgentConfig(model="claude-haiku-4-5", interactive=False), parts, system_prompt="parent")


def _four_tasks() -> Reply:
    return Reply.tools(*(("task", {"description": f"look {n}", "prompt": f"Question {n}?"}) for n in range(4)))


async def _collect(agent: Agent, prompt: str) -> list[AgentEvent]:
    return [e async for e in agent.run(prompt)]


async def test_four_sub_agents_against_a_dead_server_send_a_bounded_few(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    # The parent's request is answered; then the server only says 503 (as a proxy in
    # front of a dead model server does). Without the breaker: 4 children x 5 attempts.
    fake_llm.enqueue(_four_tasks(), *(Reply.error(503, "upstream unavailable") for _ in range(40)))
    breakers = CircuitBreakers(clock=FakeClock())
    parent = _parent(workspace, fake_llm, breakers)
    events = await asyncio.wait_for(_collect(parent, "research"), 60)

    child_requests = len(fake_llm.requests) - 1
    threshold = BreakerPolicy().failure_threshold
    # The threshold's failures, plus at most one more in flight per other child.
    assert threshold <= child_requests <= threshold + 3, child_requests
    # Every child ended with the breaker's one line, naming the cause and the next try.
    results = parent.messages[2].tool_results_parts
    assert len(results) == 4
    for result in results:
        assert result.is_error
        assert OPEN_LINE in result.content and "503" in result.content and "(in 30s)" in result.content
    # The parent's own next request was never sent: it ends with the same line.
    final = events[-1]
    assert isinstance(final, Error) and final.message.startswith(OPEN_LINE)
    assert "failed requests in a row" in final.message and "Loom tries it again from" in final.message
    assert len(fake_llm.requests) == 1 + child_requests
    assert breakers.for_endpoint("anthropic").state == "open"
    await parent.client.aclose()


class CountingProvider:
    """A real provider, counting the requests it was asked to send."""

    def __init__(self, inner: Provider) -> None:
        self.name = inner.name
        self.inner = inner
        self.sent = 0

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.sent += 1
        return self.inner.stream(request)


async def test_four_parallel_requests_to_a_port_nothing_listens_on() -> None:
    inner = AnthropicProvider(api_key="test", base_url=f"http://127.0.0.1:{free_port()}")
    counting = CountingProvider(inner)
    breaker = CircuitBreakers(clock=FakeClock()).for_endpoint("anthropic")
    results = await asyncio.gather(*(_drain(counting, breaker) for _ in range(4)), return_exceptions=True)
    await inner.aclose()
    # Without the breaker: 4 x 3 attempts (a refused connection is retried twice).
    threshold = BreakerPolicy().failure_threshold
    assert threshold <= counting.sent <= threshold + 3, counting.sent
    for result in results:
        assert isinstance(result, CircuitOpen), result
        assert result.kind == "connection" and "Connection refused" in result.message
        assert result.message.startswith(OPEN_LINE)


async def test_a_probe_after_the_cool_down_lets_the_next_run_recover(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    clock = FakeClock()
    breakers = CircuitBreakers(policy=BreakerPolicy(failure_threshold=3, cooldown_s=30.0), clock=clock)
    parent = _parent(workspace, fake_llm, breakers)
    fake_llm.enqueue(*(Reply.error(503, "upstream unavailable") for _ in range(3)))
    first = await asyncio.wait_for(_collect(parent, "hello"), 60)
    assert isinstance(first[-1], Error) and first[-1].message.startswith(OPEN_LINE)
    assert len(fake_llm.requests) == 3

    # Still cooling down: refused without a request.
    clock.now += 29.0
    refused = await asyncio.wait_for(_collect(parent, "hello again"), 60)
    assert isinstance(refused[-1], Error) and "(in 1s)" in refused[-1].message
    assert len(fake_llm.requests) == 3

    # The server is back; after the cool-down one probe goes and the run recovers.
    clock.now += 1.0
    fake_llm.enqueue(Reply.text("back again"))
    recovered = await asyncio.wait_for(_collect(parent, "hello once more"), 60)
    assert isinstance(recovered[-1], Finished) and recovered[-1].result == "back again"
    assert len(fake_llm.requests) == 4
    assert breakers.for_endpoint("anthropic").state == "closed"
    await parent.client.aclose()


async def test_a_failed_probe_opens_it_for_another_cool_down(fake_llm: FakeLLMServer, provider: Provider) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("anthropic", BreakerPolicy(failure_threshold=2, cooldown_s=10.0), clock=clock)
    fake_llm.enqueue(*(Reply.error(500, "still down") for _ in range(3)))
    with pytest.raises(CircuitOpen):
        await _drain(provider, breaker)
    assert len(fake_llm.requests) == 2
    clock.now += 10.0
    with pytest.raises(CircuitOpen, match=r"\(in 10s\)"):  # the probe failed: a fresh cool-down
        await _drain(provider, breaker)
    assert len(fake_llm.requests) == 3
    assert breaker.state == "open"


async def test_request_errors_do_not_trip_it(fake_llm: FakeLLMServer, provider: Provider) -> None:
    breaker = CircuitBreaker("anthropic", BreakerPolicy(failure_threshold=2), clock=FakeClock())
    fake_llm.enqueue(*(Reply.error(400, "bad tool schema", type="invalid_request_error") for _ in range(5)))
    for _ in range(5):
        with pytest.raises(ProviderError) as raised:
            await _drain(provider, breaker)
        assert raised.type is ProviderError and raised.value.kind == "bad_request"
    assert len(fake_llm.requests) == 5
    assert breaker.state == "closed" and breaker.consecutive_failures == 0


async def test_a_request_error_resets_the_count_of_outages(fake_llm: FakeLLMServer, provider: Provider) -> None:
    breaker = CircuitBreaker("anthropic", BreakerPolicy(failure_threshold=2), clock=FakeClock())
    fake_llm.enqueue(Reply.error(500, "down"), Reply.error(400, "bad", type="invalid_request_error"),
                     Reply.error(500, "down"), Reply.error(400, "bad", type="invalid_request_error"))
    for _ in range(2):
        with pytest.raises(ProviderError) as raised:
            await _drain(provider, breaker, RetryPolicy(max_retries=1, base_delay=0.001, jitter=0.0))
        assert raised.value.kind == "bad_request"
    assert breaker.state == "closed" and len(fake_llm.requests) == 4


async def test_aborted_requests_do_not_count(fake_llm: FakeLLMServer, provider: Provider) -> None:
    breaker = CircuitBreaker("anthropic", BreakerPolicy(failure_threshold=1), clock=FakeClock())
    for n in range(1, 4):
        fake_llm.enqueue(Reply.silent())
        cancel = CancelToken()
        run = asyncio.create_task(_drain(provider, breaker, cancel=cancel))
        assert await asyncio.to_thread(fake_llm.wait_for_requests, n, 10.0)
        cancel.cancel()
        with pytest.raises(Cancelled):
            await asyncio.wait_for(run, 10)
    assert breaker.state == "closed" and breaker.consecutive_failures == 0
    fake_llm.enqueue(Reply.text("fine"))
    await _drain(provider, breaker)
    assert len(fake_llm.requests) == 4


async def _drain(provider: Provider, breaker: CircuitBreaker, policy: RetryPolicy = FAST_RETRIES, *,
                 cancel: CancelToken | None = None) -> None:
    request = ProviderRequest(model="claude-haiku-4-5", system="s", messages=(Message.user("hello"),))
    async for _ in stream_with_retries(provider, request, policy, cancel or CancelToken(), breaker=breaker):
        pass
