"""One usage limit for all the workers of a batch.

The workers share an account: when one request hits the account's usage limit, every
other worker's next request would hit it too. So the first worker to meet it holds the
gate until the reset, and every worker waits there before its next request, rather than
each spending a request (and, without ``--wait-for-reset``, failing) to learn the same
thing. The gate is a single number, the unix time the workers wait until; the local pool
keeps it in shared memory, a Ray cluster in an actor (both behind :class:`UsageGate`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized
from typing import Protocol

from loom_engine.execution import CancelToken
from loom_engine.usage_wait import PlannedWait, Sleep, UsageLimitPolicy, UsageLimitWaiter, cancellable_sleep


class UsageGate(Protocol):
    def hold_until(self, until: float) -> None:
        """A worker's request hit the usage limit, which lifts at ``until`` (unix seconds):
        every worker waits until then (a later time than the one held extends it)."""

    def held_until(self) -> float:
        """The unix time the workers wait until (in the past, or 0: none waits)."""


class OpenGate:
    """A gate no one shares (a single run, tests): holds nothing between workers."""

    def __init__(self) -> None:
        self._until = 0.0

    def hold_until(self, until: float) -> None:
        self._until = max(self._until, until)

    def held_until(self) -> float:
        return self._until


class SharedMemoryGate:
    """The local pool's gate: a double in shared memory, inherited by each worker process
    when it starts (``multiprocessing``'s ``Value('d')`` of the pool's context)."""

    def __init__(self, value: Synchronized[float]) -> None:
        self._value = value

    def hold_until(self, until: float) -> None:
        with self._value.get_lock():
            self._value.value = max(self._value.value, until)

    def held_until(self) -> float:
        return float(self._value.value)


class GatedUsageWaiter(UsageLimitWaiter):
    """A worker's waiter: waits out its own usage limit as the policy says, tells the gate
    when, and before each request waits while the gate is held by another worker."""

    def __init__(self, gate: UsageGate, policy: UsageLimitPolicy | None = None, *,
                 clock: Callable[[], float] = time.time, sleep: Sleep = cancellable_sleep) -> None:
        super().__init__(policy, clock=clock, sleep=sleep)
        self.gate = gate

    def plan(self, resets_at: float | None, *, waited_s: float, waits: int) -> PlannedWait | None:
        planned = super().plan(resets_at, waited_s=waited_s, waits=waits)
        if planned is not None:
            self.gate.hold_until(planned.until)
        return planned

    async def before_request(self, cancel: CancelToken) -> None:
        # Held only by a worker that waits, so only a batch that waits for resets pauses here;
        # a later hold (another worker met the limit again) is waited for too.
        while (left := self.gate.held_until() - self.clock()) > 0:
            await self._sleep(left, cancel)
