"""End to end in tmux: retries show as one line that updates in place, and the final
error is one plain line that says what to do."""

from __future__ import annotations

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal


def test_dropped_streams_show_one_retry_line_then_one_plain_error(
        terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(*[Reply.broken("partial answer " * 5, after=3) for _ in range(5)])
    terminal.ask("hello")
    seen: list[str] = []

    def retrying(screen: str) -> bool:
        seen.append(screen)
        return "(attempt 3 of 5)" in screen

    screen = terminal.wait_for(retrying, "the retry line", timeout=60)
    retry_rows = [row for row in screen.splitlines() if "retrying" in row]
    assert len(retry_rows) == 1, screen
    assert "↻ connection dropped — retrying" in retry_rows[0]
    screen = terminal.wait_for(lambda s: "✗" in s and "esc to interrupt" not in s, "the final error", timeout=90)
    assert "retrying" not in screen  # nothing stale left after giving up
    assert "incomplete chunked read" not in screen and "peer closed" not in screen
    assert "stream_broken" not in screen
    error = screen[screen.index("✗"):]
    assert "tried 5 times" in error and "check your network" in error
    # Never more than one retry line at any moment.
    assert all(sum("retrying" in row for row in s.splitlines()) <= 1 for s in seen)


def test_a_final_429_does_not_promise_a_retry(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(*[Reply.error(429, "rate limited", type="rate_limit_error", retry_after=0.1)
                       for _ in range(5)])
    terminal.ask("hello")
    screen = terminal.wait_for(lambda s: "✗" in s and "esc to interrupt" not in s, "the final error", timeout=90)
    error = " ".join(screen[screen.index("✗"):].split())
    assert "retry after" not in error and "retrying" not in screen
    assert "rate_limit_error" not in error
    assert "wait a minute" in error


def test_prompt_too_long_suggests_compact(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.prompt_too_long())
    terminal.ask("hello")
    screen = terminal.wait_for(lambda s: "✗" in s and "esc to interrupt" not in s, "the final error", timeout=60)
    assert "/compact" in screen[screen.index("✗"):]
