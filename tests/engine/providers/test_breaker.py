"""CircuitBreaker: when it opens, what it says, the half-open probe, and who shares one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.execution import Cancelled, CancelToken
from loom_engine.parts import AgentParts
from loom_engine.providers.base import Provider, ProviderError
from loom_engine.providers.breaker import BreakerPolicy, CircuitBreaker, CircuitBreakers, CircuitOpen
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace


class FakeClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def down(kind: str = "connection") -> ProviderError:
    return ProviderError(kind, "cannot connect to Anthropic at http://127.0.0.1:9 (Connection refused)")  # type: ignore[arg-type]


def breaker(clock: FakeClock, threshold: int = 3, cooldown: float = 30.0) -> CircuitBreaker:
    return CircuitBreaker("anthropic", BreakerPolicy(failure_threshold=threshold, cooldown_s=cooldown), clock=clock)


async def fail_once(b: CircuitBreaker, error: ProviderError | None = None) -> None:
    b.failed(await b.admit(CancelToken()), error or down())


async def test_it_opens_after_the_threshold_of_outages_in_a_row_and_says_why_and_when() -> None:
    clock = FakeClock()
    b = breaker(clock)
    for _ in range(2):
        await fail_once(b)
    assert b.state == "closed"
    await fail_once(b)
    assert b.state == "open"
    clock.now += 12.2
    with pytest.raises(CircuitOpen) as raised:
        await b.admit(CancelToken())
    error = raised.value
    assert error.kind == "connection" and error.retry_in_s == pytest.approx(17.8)
    assert "\n" not in error.message
    assert error.message.startswith(
        "the anthropic server is not answering (3 failed requests in a row, the last: cannot connect to "
        "Anthropic at http://127.0.0.1:9 (Connection refused)); Loom tries it again from ")
    assert error.message.endswith("(in 18s)")


@pytest.mark.parametrize("kind", ["bad_request", "auth", "context_length", "rate_limit", "not_found", "usage_limit"])
async def test_an_answer_from_the_server_is_no_outage_and_resets_the_count(kind: str) -> None:
    b = breaker(FakeClock())
    for _ in range(2):
        await fail_once(b)
    await fail_once(b, down(kind))
    await fail_once(b)
    assert b.state == "closed" and b.consecutive_failures == 1


@pytest.mark.parametrize("kind", ["connection", "timeout", "server", "overloaded", "stream_broken"])
async def test_every_outage_kind_counts(kind: str) -> None:
    b = breaker(FakeClock(), threshold=1)
    await fail_once(b, down(kind))
    assert b.state == "open"


async def test_after_the_cool_down_one_probe_goes_and_an_answer_closes_it() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=1)
    await fail_once(b)
    clock.now += 30.0
    assert b.state == "half_open"
    probe = await b.admit(CancelToken())
    assert probe.probe
    b.answered(probe)
    assert b.state == "closed" and b.consecutive_failures == 0
    assert not (await b.admit(CancelToken())).probe


async def test_requests_during_the_probe_wait_for_its_outcome() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=1)
    await fail_once(b)
    clock.now += 30.0
    probe = await b.admit(CancelToken())
    waiting = [asyncio.create_task(b.admit(CancelToken())) for _ in range(3)]
    await asyncio.sleep(0)  # one turn of the loop: each task runs up to its wait (no clock involved)
    assert not any(task.done() for task in waiting)
    b.failed(probe, down("server"))
    for task in waiting:
        with pytest.raises(CircuitOpen, match=r"\(in 30s\)"):  # a fresh cool-down from the probe's failure
            await task
    assert b.state == "open"

    clock.now += 30.0
    probe = await b.admit(CancelToken())
    waiting = [asyncio.create_task(b.admit(CancelToken())) for _ in range(3)]
    await asyncio.sleep(0)
    b.answered(probe)
    admitted = await asyncio.gather(*waiting)
    assert not any(a.probe for a in admitted)


async def test_an_aborted_probe_hands_the_probe_to_the_next_request() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=1)
    await fail_once(b)
    clock.now += 30.0
    probe = await b.admit(CancelToken())
    next_one = asyncio.create_task(b.admit(CancelToken()))
    await asyncio.sleep(0)
    b.withdrawn(probe)
    assert (await next_one).probe
    assert b.consecutive_failures == 1  # the abort counted for nothing


async def test_a_request_waiting_for_the_probe_can_be_aborted() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=1)
    await fail_once(b)
    clock.now += 30.0
    await b.admit(CancelToken())
    cancel = CancelToken()
    waiter = asyncio.create_task(b.admit(cancel))
    await asyncio.sleep(0)
    cancel.cancel()
    with pytest.raises(Cancelled):
        await waiter


async def test_late_failures_of_requests_sent_before_it_opened_do_not_prolong_the_cool_down() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=2)
    early = [await b.admit(CancelToken()) for _ in range(4)]
    b.failed(early[0], down())
    b.failed(early[1], down())
    clock.now += 20.0
    b.failed(early[2], down())
    b.failed(early[3], down())
    clock.now += 10.0
    assert b.state == "half_open"


def test_the_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="threshold"):
        BreakerPolicy(failure_threshold=0)
    with pytest.raises(ValueError, match="cool-down"):
        BreakerPolicy(cooldown_s=0)


class OpenAIScripted(ScriptedProvider):
    name = "openai"


def test_a_sub_agent_shares_its_parents_breaker_and_another_vendor_has_its_own(tmp_path: Path) -> None:
    def make_provider(name: str) -> Provider:
        return OpenAIScripted([])

    parts = AgentParts(provider=ScriptedProvider([]), workspace=Workspace.at(tmp_path), make_provider=make_provider)
    parent = Agent(AgentConfig(model="m", provider="scripted"), parts, system_prompt="p")
    same = AgentConfig(model="m", provider="scripted").inherit()
    other = AgentConfig(model="gpt-5", provider="openai").inherit()
    child = Agent(same, parts.for_child(same, None, vendor="scripted"), system_prompt="c")
    foreign = [Agent(other, parts.for_child(other, None, vendor="scripted"), system_prompt="c") for _ in range(2)]
    assert parent.client.breaker is not None
    assert child.client.breaker is parent.client.breaker
    assert foreign[0].client.breaker is foreign[1].client.breaker is not parent.client.breaker
    assert isinstance(parts.breakers, CircuitBreakers)
    assert foreign[0].client.breaker is parts.breakers.for_endpoint("openai")
