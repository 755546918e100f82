"""End to end in tmux, at 120 and 60 columns: at a usage limit the chat says once when
it resets, counts down in the line above the prompt, and then the answer arrives. One
scene (the wait is real seconds): the countdown is read at 120 columns, then again after
the window narrows to 60."""

from __future__ import annotations

from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import drawn_to_the_edge, loom_in_tmux, terminal_env


def test_the_chat_counts_down_to_the_reset_then_goes_on(tmp_path: Path, workspace: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), width=120) as term:
        fake_llm.enqueue(Reply.usage_limit(reset_in=10), Reply.text("Back at work."))
        term.ask("keep going")
        for width in (120, 60):
            term.resize(width, 40)
            # The words are part of the wait: a frame may show the box redrawn before its text.
            screen = term.wait_for(lambda s: "resuming at" in s and "s left)" in s and drawn_to_the_edge(s)
                                   and "Anthropic usage limit reached" in s and "resets at" in " ".join(s.split()),
                                   f"the countdown drawn at {width} columns", timeout=60)
            (tmp_path / f"countdown-{width}.txt").write_text(screen)
            countdown = [row for row in screen.splitlines() if "resuming at" in row]
            assert len(countdown) == 1 and "⏸ usage limit — resuming at" in countdown[0], screen
            assert "s left)" in countdown[0]  # the time left shows even at 60 columns
            assert "Anthropic usage limit reached" in screen and "resets at" in " ".join(screen.split())
            assert all(len(row) <= width for row in screen.splitlines())
        # The countdown gives way to the answer (the activity line is redrawn on its next tick).
        term.wait_for(lambda s: "Back at work." in s and "resuming at" not in s, "the answer after the wait",
                      timeout=60)
    assert len(fake_llm.requests) == 2
