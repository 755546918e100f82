"""UsageLimitWaiter: how long a run waits for a usage limit, on a fake clock."""

from __future__ import annotations

import pytest

from loom_engine.execution import Cancelled, CancelToken
from loom_engine.usage_wait import UsageLimitPolicy, UsageLimitWaiter, cancellable_sleep

NOW = 1_000_000.0


def waiter(**policy: float | bool) -> UsageLimitWaiter:
    return UsageLimitWaiter(UsageLimitPolicy(**policy), clock=lambda: NOW)  # type: ignore[arg-type]


def test_it_does_not_wait_unless_the_policy_says_so() -> None:
    assert waiter().plan(NOW + 10, waited_s=0, waits=0) is None


def test_a_known_reset_is_waited_for_with_the_margin() -> None:
    planned = waiter(wait=True, margin_s=1.0).plan(NOW + 120, waited_s=0, waits=0)
    assert planned is not None
    assert (planned.wait_s, planned.until, planned.reset_known) == (121.0, NOW + 121, True)
    # A reset already past (the server's clock is ahead): only the margin.
    again = waiter(wait=True, margin_s=1.0).plan(NOW - 5, waited_s=121, waits=1)
    assert again is not None and again.wait_s == 1.0


def test_a_reset_beyond_the_longest_wait_is_not_waited_for() -> None:
    w = waiter(wait=True, max_wait_s=3600, margin_s=0.0)
    assert w.plan(NOW + 3600, waited_s=0, waits=0) is not None
    assert w.plan(NOW + 3601, waited_s=0, waits=0) is None
    assert w.plan(NOW + 1800, waited_s=1801, waits=1) is None  # the waits of one request add up


def test_an_unknown_reset_backs_off_doubling_to_a_cap_within_the_longest_wait() -> None:
    w = waiter(wait=True, unknown_reset_first_s=60, unknown_reset_max_s=600, max_wait_s=1000)
    waits = [w.plan(None, waited_s=0, waits=n) for n in range(6)]
    assert [p.wait_s if p else None for p in waits] == [60, 120, 240, 480, 600, 600]
    assert all(p is not None and not p.reset_known for p in waits)
    assert w.plan(None, waited_s=900, waits=4) is None


def test_the_policy_refuses_a_negative_wait() -> None:
    with pytest.raises(ValueError, match="longest wait"):
        UsageLimitPolicy(max_wait_s=-1)


async def test_the_sleep_ends_at_once_when_cancelled() -> None:
    cancel = CancelToken()
    cancel.cancel("stop")
    with pytest.raises(Cancelled):
        await cancellable_sleep(3600, cancel)
