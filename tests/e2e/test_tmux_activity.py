"""End to end in tmux: the activity line says what the run is really doing."""

from __future__ import annotations

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal


def test_it_says_thinking_only_when_the_model_thinks(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("A plain answer.", pause=(0, 4.0)),
                     Reply(thinking="let me see " * 30, text="A thought-out answer.", chunk_size=4,
                           chunk_delay=0.05))
    terminal.ask("hello")
    screen = terminal.wait_for(lambda s: "waiting for the model" in s, "the wait for the first token")
    assert "thinking ·" not in screen
    terminal.wait_for(lambda s: "A plain answer." in s and "esc to interrupt" not in s, "the answer")
    terminal.type("think about it")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "thinking ·" in s, "the thinking phase")
    terminal.wait_for(lambda s: "A thought-out answer." in s, "the second answer", timeout=60)


def test_an_interrupted_answer_still_counts_in_the_token_totals(
        terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    slow = " ".join(f"word{i}" for i in range(3000))
    fake_llm.enqueue(Reply.text(slow, chunk_size=6, chunk_delay=0.02))
    terminal.ask("hello")
    terminal.wait_for(lambda s: "word40" in s, "streaming text")
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "interrupted" in s and "esc to interrupt" not in s, "the run to stop")
    # The tokens of the stopped answer were paid for: the status bar counts them.
    screen = terminal.wait_for(lambda s: "↑0 ↓0" not in s, "the stopped answer's tokens in the status bar")
    assert "$0.0000" not in screen
