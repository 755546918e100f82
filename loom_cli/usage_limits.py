"""Usage limits as the user meets them: the flags' policy, the reset time in words, and
`loom run`'s countdown on stderr.

The engine waits (:mod:`loom_engine.usage_wait`); this says what it waits for. The
chat always waits - a user at the keyboard expects to be told and to go on when the
allowance is back, and Esc ends the wait - `loom run` only with ``--wait-for-reset``.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import re
import time
from collections.abc import Callable
from typing import TextIO

from loom_engine.events import Error, UsageLimitWait
from loom_engine.usage_wait import DEFAULT_MAX_WAIT_S, UsageLimitPolicy

from .stop_reason import plain_error
from .visible_text import visible

# The chat waits for any reset a server names (a weekly one included).
CHAT_POLICY = UsageLimitPolicy(wait=True, max_wait_s=8 * 24 * 3600.0)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``30m``, ``5h``, ``1d`` (a bare number is seconds)."""
    found = _DURATION.match(text)
    if found is None:
        raise ValueError(f"--max-wait {text!r}: not a duration (use e.g. 90s, 30m, 5h)")
    return float(found.group(1)) * _UNIT_S[(found.group(2) or "s").lower()]


def headless_policy(wait_for_reset: bool, max_wait: str | None) -> UsageLimitPolicy:
    """The policy of `loom run`'s flags; ValueError for a bad ``--max-wait``."""
    if max_wait is not None and not wait_for_reset:
        raise ValueError("--max-wait needs --wait-for-reset")
    limit = parse_duration(max_wait) if max_wait is not None else DEFAULT_MAX_WAIT_S
    return UsageLimitPolicy(wait=wait_for_reset, max_wait_s=limit)


def span(seconds: float, *, with_seconds: bool = False) -> str:
    """``2h 14m``, ``3d 4h``, ``4m 05s``, ``12s``: a time left, for a person."""
    total = max(0, math.ceil(seconds))
    if not with_seconds and total >= 600:
        total = math.ceil(total / 60) * 60  # whole minutes, rounded up: "in 2h 10m", not 2h 09m 59s
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m" + (f" {secs:02d}s" if with_seconds else "")
    if minutes:
        return f"{minutes}m {secs:02d}s" if with_seconds or minutes < 10 else f"{minutes}m"
    return f"{secs}s"


def clock_time(at: float, now: float) -> str:
    """``21:40`` in local time, with the day when it is not within the next 20 hours."""
    when = datetime.datetime.fromtimestamp(at)
    return when.strftime("%a %H:%M" if at - now > 20 * 3600 else "%H:%M")


def reset_phrase(resets_at: float, now: float) -> str:
    """``resets at 21:40 (in 2h 14m)``."""
    return f"resets at {clock_time(resets_at, now)} (in {span(resets_at - now)})"


def stop_line(event: Error, policy: UsageLimitPolicy, message: str, now: float) -> str:
    """Why `loom run` stopped at a usage limit, when it lifts, and what would go on."""
    if event.resets_at is None:
        when = "the server did not say when it resets"
    else:
        when = reset_phrase(event.resets_at, now)
    if policy.wait:
        advice = f"that is beyond --max-wait {span(policy.max_wait_s)}"
    else:
        advice = "`loom run --wait-for-reset` waits for it; `loom run --continue` goes on later"
    return f"{message} — {when}; {advice}"


def wait_line(event: UsageLimitWait, now: float, *, live: bool) -> str:
    """The line shown while a run waits: the countdown (``live``: to the second)."""
    left = span(event.until - now, with_seconds=live)
    at = clock_time(event.until, now)
    # Short: the chat's activity line must keep the time left at 60 columns.
    if event.reset_known:
        return f"usage limit — resuming at {at} ({left} left)"
    return f"usage limit, no reset time given — trying again at {at} ({left} left)"


def wait_notice(event: UsageLimitWait, now: float) -> str:
    """The chat's one transcript line when a wait begins."""
    when = reset_phrase(event.resets_at, now) if event.resets_at is not None else "no reset time given"
    return f"⏸ {plain_error(event.reason)} — {when}; Loom waits, then goes on (esc stops waiting)"


class StderrCountdown:
    """`loom run`'s countdown while it waits: one line rewritten every second on a
    terminal, else a line a minute (a log stays readable).

    ``err`` is the real stream (the line is rewritten with control sequences of our own;
    the text in it goes through ``visible``); ``clean`` redacts what the server said."""

    def __init__(self, err: TextIO, *, clock: Callable[[], float] = time.time,
                 clean: Callable[[str], str] = lambda text: text) -> None:
        self._err = err
        self._clock = clock
        self._clean = clean
        self._live = _is_terminal(err)
        self._task: asyncio.Task[None] | None = None

    def start(self, event: UsageLimitWait) -> None:
        self.stop()
        self._err.write(visible(self._clean(f"loom: {plain_error(event.reason)}")) + "\n")
        self._task = asyncio.get_running_loop().create_task(self._tick(event))

    def stop(self) -> None:
        """The wait ended (the next event came): the live line gives way."""
        if self._task is None:
            return
        self._task.cancel()
        self._task = None
        if self._live:
            self._err.write("\r\x1b[2K")
        self._err.flush()

    async def _tick(self, event: UsageLimitWait) -> None:
        period = 1.0 if self._live else 60.0
        while True:
            line = visible(f"loom: {wait_line(event, self._clock(), live=self._live)}")
            self._err.write(f"\r\x1b[2K{line}" if self._live else f"{line}\n")
            self._err.flush()
            await asyncio.sleep(period)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
