"""One usage limit for all workers: the worker that meets it holds the gate, and every
worker waits there before its next request (with a clock and sleep of the test's)."""

from __future__ import annotations

import asyncio
import multiprocessing

from loom_cli.batch.gate import GatedUsageWaiter, OpenGate, SharedMemoryGate
from loom_engine.execution import CancelToken
from loom_engine.usage_wait import UsageLimitPolicy


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
