"""A circuit breaker per provider endpoint, shared by an agent and its sub-agents.

Retries (:mod:`.retry`) make one request robust against a blip. They do nothing for a
server that is down: four parallel sub-agents would each send their full round of
retries to it. The breaker counts consecutive failures that say "the server is not
answering" (cannot connect, 5xx, timeouts) across every request to the endpoint:

- closed: requests go; ``failure_threshold`` such failures in a row open it;
- open: no request is sent; each fails at once with :class:`CircuitOpen`, which names
  the last failure and when the next attempt will be made;
- half-open (after ``cooldown_s``): one probe request goes; the others wait for its
  outcome. An answer closes the breaker, a failure opens it again for another cool-down.

Any answer from the server counts as one (a 400, a rate limit, a refused key: the
server is up); an aborted request counts for nothing.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..execution import Cancelled, CancelToken
from .base import ProviderError, ProviderErrorKind

BreakerState = Literal["closed", "open", "half_open"]

# Failures that say the endpoint is not serving. A rate limit is an answer (the retry
# loop honours its retry-after); a request error says nothing about the server's health.
_OUTAGE_KINDS: frozenset[ProviderErrorKind] = frozenset(
    {"connection", "timeout", "server", "overloaded", "stream_broken"})


@dataclass(frozen=True)
class BreakerPolicy:
    # Consecutive outage failures (over all requests to the endpoint) that open it.
    # Above one request's own retries for a dead server (3) so that a lone agent
    # still gets its retries, below what parallel sub-agents would send (4 x 3..5).
    failure_threshold: int = 5
    # How long an open breaker refuses requests before letting one probe through.
    cooldown_s: float = 30.0

    def __post_init__(self) -> None:
        if self.failure_threshold < 1:
            raise ValueError("the breaker's failure threshold must be at least 1")
        if not self.cooldown_s > 0:
            raise ValueError("the breaker's cool-down must be a positive number of seconds")


class CircuitOpen(ProviderError):
    """A request not sent because the endpoint's breaker is open. Its kind is the last
    failure's, so it is worded like that failure; it is never retried by the retry loop."""

    def __init__(self, kind: ProviderErrorKind, message: str, *, retry_in_s: float) -> None:
        super().__init__(kind, message)
        self.retry_in_s = retry_in_s


@dataclass(frozen=True, eq=False)
class Admission:
    """One request let through; handed back with its outcome. ``probe``: the half-open
    state's single trial request."""

    probe: bool = False


class CircuitBreaker:
    """The breaker of one endpoint (see the module's docstring)."""

    def __init__(self, endpoint: str, policy: BreakerPolicy | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoint = endpoint
        self.policy = policy or BreakerPolicy()
        self._clock = clock
        self._failures = 0
        self._last_failure: ProviderError | None = None
        self._opened_at: float | None = None
        self._probe: Admission | None = None
        # Set when the probe in flight has an outcome; siblings wait on it.
        self._probe_settled: asyncio.Event | None = None

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._probe is not None or self._clock() - self._opened_at >= self.policy.cooldown_s:
            return "half_open"
        return "open"

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    async def admit(self, cancel: CancelToken) -> Admission:
        """Let a request through, or raise :class:`CircuitOpen` (nothing may be sent) or
        :class:`Cancelled`. While a probe is in flight, waits for its outcome."""
        while True:
            cancel.raise_if_cancelled()
            state = self.state
            if state == "closed":
                return Admission()
            if state == "open":
                raise self.rejection()
            if self._probe is None:
                self._probe = Admission(probe=True)
                self._probe_settled = asyncio.Event()
                return self._probe
            assert self._probe_settled is not None
            await _wait_either(self._probe_settled, cancel)

    def rejection(self) -> CircuitOpen:
        """The error for a request refused now (the breaker being open)."""
        opened_at = self._opened_at if self._opened_at is not None else self._clock()
        left = max(0.0, opened_at + self.policy.cooldown_s - self._clock())
        last = self._last_failure
        at = (datetime.datetime.now() + datetime.timedelta(seconds=left)).strftime("%H:%M:%S")
        cause = last.message if last is not None else "the server is not answering"
        message = (f"the {self.endpoint} server is not answering ({self._failures} failed requests in a row, "
                   f"the last: {cause}); Loom tries it again from {at} (in {math.ceil(left)}s)")
        return CircuitOpen(last.kind if last is not None else "connection", message, retry_in_s=left)

    def answered(self, admission: Admission) -> None:
        """The server answered the request (a stream began, or any error response that
        is not an outage): the endpoint is up."""
        self._failures = 0
        self._last_failure = None
        self._opened_at = None
        self._settle(admission)

    def failed(self, admission: Admission, error: ProviderError) -> None:
        """The request failed with ``error``; an outage kind counts towards opening."""
        if error.kind not in _OUTAGE_KINDS:
            self.answered(admission)
            return
        self._failures += 1
        self._last_failure = error
        if admission is self._probe or (self._opened_at is None
                                        and self._failures >= self.policy.failure_threshold):
            # A failed probe starts a new cool-down; failures of requests sent before the
            # breaker opened do not prolong the one running.
            self._opened_at = self._clock()
        self._settle(admission)

    def withdrawn(self, admission: Admission) -> None:
        """The request was aborted before any outcome: it counts for nothing (a probe's
        place goes to the next request)."""
        self._settle(admission)

    def _settle(self, admission: Admission) -> None:
        if admission is not self._probe:
            return
        self._probe = None
        if self._probe_settled is not None:
            self._probe_settled.set()
            self._probe_settled = None


async def _wait_either(event: asyncio.Event, cancel: CancelToken) -> None:
    settled = asyncio.ensure_future(event.wait())
    aborted = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait((settled, aborted), return_when=asyncio.FIRST_COMPLETED)
    finally:
        settled.cancel()
        aborted.cancel()
    if cancel.cancelled:
        raise Cancelled(cancel.reason)


@dataclass
class CircuitBreakers:
    """The breakers of one agent tree, one per endpoint; shared with every sub-agent, so
    children on the parent's vendor share its breaker and a child on another vendor
    gets that vendor's (shared with its siblings on it)."""

    policy: BreakerPolicy = field(default_factory=BreakerPolicy)
    clock: Callable[[], float] = time.monotonic
    _by_endpoint: dict[str, CircuitBreaker] = field(default_factory=dict)

    def for_endpoint(self, endpoint: str) -> CircuitBreaker:
        breaker = self._by_endpoint.get(endpoint)
        if breaker is None:
            breaker = self._by_endpoint[endpoint] = CircuitBreaker(endpoint, self.policy, clock=self.clock)
        return breaker
