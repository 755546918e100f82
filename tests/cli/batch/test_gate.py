"""One usage limit for all workers: the worker that meets it holds the gate, and every
worker waits there before its next request (with a clock and sleep of the test's)."""

from __future__ import annotations

import asyncio
import io
import multiprocessing
import time
from pathlib import Path

from builtin_tools import default_tools
from loom_cli.batch.gate import GatedUsageWaiter, OpenGate, SharedMemoryGate
from loom_cli.headless import EXIT_INTERRUPTED, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.execution import CancelToken
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.usage_wait import UsageLimitPolicy
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float, cancel: CancelToken) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_worker_at_the_limit_holds_every_worker_until_the_reset() -> None:
    gate, clock = OpenGate(), Clock()
    waiting = UsageLimitPolicy(wait=True, margin_s=1.0)
    hit = GatedUsageWaiter(gate, waiting, clock=clock, sleep=clock.sleep)
    other = GatedUsageWaiter(gate, waiting, clock=clock, sleep=clock.sleep)
    asyncio.run(other.before_request(CancelToken()))
    assert clock.slept == []  # nothing held: no wait
    planned = hit.plan(1030.0, waited_s=0.0, waits=0)
    assert planned is not None and planned.until == 1031.0 and gate.held_until() == 1031.0
    clock.now = 1010.0
    asyncio.run(other.before_request(CancelToken()))
    assert clock.slept == [21.0] and clock.now == 1031.0  # the other worker waited for the same reset


def test_a_batch_that_does_not_wait_holds_no_one() -> None:
    gate, clock = OpenGate(), Clock()
    hit = GatedUsageWaiter(gate, UsageLimitPolicy(wait=False), clock=clock, sleep=clock.sleep)
    assert hit.plan(1030.0, waited_s=0.0, waits=0) is None
    assert gate.held_until() == 0.0


def test_the_shared_memory_gate_keeps_the_latest_reset() -> None:
    gate = SharedMemoryGate(multiprocessing.get_context("spawn").Value("d", 0.0))
    gate.hold_until(50.0)
    gate.hold_until(20.0)  # an earlier reset does not shorten the wait
    assert gate.held_until() == 50.0


async def test_an_agent_held_at_the_gate_sends_nothing_and_stops_when_aborted(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    gate = OpenGate()
    gate.hold_until(time.time() + 3600)  # another worker met the limit
    waiting = asyncio.Event()

    async def sleep(seconds: float, cancel: CancelToken) -> None:
        waiting.set()
        await cancel.sleep(seconds)

    waiter = GatedUsageWaiter(gate, UsageLimitPolicy(wait=True), sleep=sleep)
    provider = create_provider("anthropic", api_key="k", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path),
                             usage_limits=waiter))
    run = asyncio.create_task(run_headless(agent, "do the work", "text", io.StringIO(), io.StringIO()))
    held = asyncio.create_task(waiting.wait())
    await asyncio.wait({run, held}, return_when=asyncio.FIRST_COMPLETED)  # a run that went past the gate ends
    assert waiting.is_set(), "the request went out past the held gate"
    agent.abort()
    assert await run == EXIT_INTERRUPTED
    assert fake_llm.requests == []
