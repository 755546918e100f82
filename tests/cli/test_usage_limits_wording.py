"""The words of a usage limit: durations the flags take, the time left, the countdown."""

from __future__ import annotations

import asyncio
import io

import pytest

from loom_cli.usage_limits import StderrCountdown, headless_policy, parse_duration, span, wait_line
from loom_engine.events import UsageLimitWait


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("30m", 1800), ("5h", 18000), ("1.5h", 5400),
                                               ("2d", 172800), ("45", 45), (" 10M ", 600)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5 hours", "-3m", "h"])
def test_bad_durations_say_what_to_use(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a duration \(use e\.g\. 90s, 30m, 5h\)"):
        parse_duration(text)


def test_the_flags_policy() -> None:
    assert headless_policy(False, None).wait is False
    assert headless_policy(True, None).max_wait_s == 5 * 3600
    assert headless_policy(True, "90s").max_wait_s == 90
    with pytest.raises(ValueError, match="--max-wait needs --wait-for-reset"):
        headless_policy(False, "1h")


@pytest.mark.parametrize(("seconds", "live", "said"), [
    (12.2, False, "13s"), (245, False, "4m 05s"), (7741, False, "2h 10m"), (7741, True, "2h 09m 01s"),
    (3 * 86400 + 4 * 3600, False, "3d 4h"), (-5, False, "0s")])
def test_span(seconds: float, live: bool, said: str) -> None:
    assert span(seconds, with_seconds=live) == said


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_on_a_terminal_the_countdown_is_one_line_rewritten_then_cleared() -> None:
    err = Terminal()
    clock = [1000.0]
    countdown = StderrCountdown(err, clock=lambda: clock[0])
    event = UsageLimitWait(until=1090.0, wait_s=90.0, reset_known=True, resets_at=1089.0,
                           reason="Anthropic usage limit reached")
    countdown.start(event)
    await asyncio.sleep(0)  # the first tick is written at once
    countdown.stop()
    written = err.getvalue()
    assert written.startswith("loom: Anthropic usage limit reached\n\r\x1b[2Kloom: usage limit — resuming at ")
    assert written.endswith("(1m 30s left)\r\x1b[2K")
    assert "\n" not in written.split("\n", 1)[1]  # the countdown never scrolls


def test_the_wait_line_says_when_the_reset_is_a_guess() -> None:
    event = UsageLimitWait(until=1060.0, wait_s=60.0, reset_known=False, reason="")
    assert wait_line(event, 1000.0, live=False).startswith("usage limit, no reset time given — trying "
                                                          "again at ")
