"""Waiting out a usage limit: whether to, how long, and the cancellable wait itself.

A usage limit (:class:`~loom_engine.providers.base.ProviderError` of kind
``usage_limit``) is not retried by the retry loop: it lasts until the allowance resets,
often hours. The turn either stops with the error (the default of ``loom run``) or, when
the policy says so, waits for the reset and sends the same request again - the
transcript is untouched meanwhile, so the tool calls already made are not made again.

The UI chooses the policy; the clock and the sleep are injectable so tests need not
wait for real time.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .execution import CancelToken

# What `loom run --max-wait` defaults to: a subscription's shortest window.
DEFAULT_MAX_WAIT_S = 5 * 3600.0


@dataclass(frozen=True)
class UsageLimitPolicy:
    """Whether a run waits for a usage limit to reset, and for how long at most."""

    wait: bool = False
    # The most a run waits in all for one request (several waits when the server
    # refuses again after a reset); a reset further away ends the run instead.
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    # Added to the reset time: clocks differ, and a request in the reset's very second
    # may be refused once more.
    margin_s: float = 1.0
    # No reset time given (OpenAI's quota errors): wait this long, doubling up to
    # ``unknown_reset_max_s`` per wait, then ask again.
    unknown_reset_first_s: float = 60.0
    unknown_reset_max_s: float = 15 * 60.0

    def __post_init__(self) -> None:
        if not self.max_wait_s >= 0:
            raise ValueError("the longest wait for a usage limit must be zero or more seconds")


@dataclass(frozen=True)
class PlannedWait:
    """One wait for a usage limit: ``wait_s`` from now, until ``until`` (unix seconds).
    ``reset_known``: the server said when the limit resets (else Loom guesses)."""

    wait_s: float
    until: float
    reset_known: bool


Sleep = Callable[[float, CancelToken], Awaitable[None]]


async def cancellable_sleep(seconds: float, cancel: CancelToken) -> None:
    """The default :data:`Sleep`: ``seconds``, cut short (Cancelled) by ``cancel``."""
    await cancel.sleep(seconds)


class UsageLimitWaiter:
    """The policy with its clock (unix seconds) and sleep; one per agent tree."""

    def __init__(self, policy: UsageLimitPolicy | None = None, *, clock: Callable[[], float] = time.time,
                 sleep: Sleep = cancellable_sleep) -> None:
        self.policy = policy or UsageLimitPolicy()
        self.clock = clock
        self._sleep = sleep

    def plan(self, resets_at: float | None, *, waited_s: float, waits: int) -> PlannedWait | None:
        """The next wait for a limit lifting at ``resets_at`` (None: not said), after
        ``waits`` waits of ``waited_s`` in all for this request; None: do not wait (the
        policy says not to, or the reset is beyond the longest wait)."""
        policy = self.policy
        if not policy.wait:
            return None
        now = self.clock()
        if resets_at is not None:
            wait_s = max(0.0, resets_at - now) + policy.margin_s
        else:
            wait_s = min(policy.unknown_reset_max_s, policy.unknown_reset_first_s * 2.0 ** waits)
        if waited_s + wait_s > policy.max_wait_s:
            return None
        return PlannedWait(wait_s, now + wait_s, resets_at is not None)

    async def wait(self, planned: PlannedWait, cancel: CancelToken) -> None:
        await self._sleep(planned.wait_s, cancel)

    async def before_request(self, cancel: CancelToken) -> None:
        """Called before each request: nothing here. A waiter whose limit is shared with
        other processes (`loom batch`'s workers) waits while another one is held."""

