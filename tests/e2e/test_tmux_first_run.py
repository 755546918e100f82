"""First run and leaving, in a real terminal: the installed `loom` in tmux.

No API key, a prompt whose request failed, Ctrl+D during a run, and what the terminal
keeps once Loom has quit (the pane stays open 30 s after the process ends).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, open_loom, terminal_env


def ready(screen: str) -> bool:
    return "Ask Loom" in screen and "claude-sonnet-4-5" in screen


@pytest.mark.parametrize("width", [120, 60])
def test_no_api_key_shows_the_setup_and_keeps_the_prompt(tmp_path: Path, workspace: Path, width: int) -> None:
    term = open_loom(workspace, terminal_env(tmp_path, None, api_key=None), width=width, height=50)
    try:
        # The whole setup block, not its first rows: a loaded machine may show a part drawn.
        screen = term.wait_for(lambda s: "No API key" in s and "Ask Loom" in s and "--provider" in s
                               and "loading…" not in s, "the setup screen", timeout=60)
        assert "export ANTHROPIC_API_KEY=" in screen
        assert "OPENAI_BASE_URL=http://localhost:11434/v1" in screen
        assert "LOOM_PROVIDER" in screen and "--provider" in screen
        term.type("fix the bug")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "not sent" in s, "the refusal")
        assert "queued" not in screen
        assert "│ fix the bug" in screen  # still in the input, ready to send later
        term.keys("C-d")
        screen = term.wait_for(lambda s: "Loom did not reach a model" in s, "the line left on exit")
        assert "ANTHROPIC_API_KEY is not set" in screen
    finally:
        term.close()


def test_the_last_exchange_stays_on_screen_after_ctrl_d(tmp_path: Path, workspace: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("The greeting is in src/app.py.\n\nIt says hello to the name given."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=100, height=30)
    try:
        term.wait_for(ready, "the prompt", timeout=60)
        term.type("where is the greeting?")
        term.keys("Enter")
        term.wait_for(lambda s: "It says hello" in s, "the answer")
        term.keys("C-d")
        screen = term.wait_for(lambda s: "loom --continue" in s, "the exit summary")
        assert "> where is the greeting?" in screen
        assert "The greeting is in src/app.py." in screen
        sessions = list((tmp_path / "data" / "sessions").glob("*.jsonl"))
        assert len(sessions) == 1 and f"loom --resume {sessions[0].stem}" in screen
        assert "Ask Loom" not in screen
    finally:
        term.close()


def test_a_failed_prompt_comes_back_and_is_not_merged_into_the_next(tmp_path: Path, workspace: Path,
                                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.error(401, "invalid x-api-key", type="authentication_error"), Reply.text("Hi!"))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=110, height=40)
    try:
        term.wait_for(ready, "the prompt", timeout=60)
        term.type("refactor the parser")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "not sent" in s, "the failed prompt given back")
        assert "your message is back in the prompt" in screen
        assert "│ refactor the parser" in screen
        term.keys("C-u")  # the user chooses to send something else instead
        term.wait_for(lambda s: "│ refactor the parser" not in s, "the input cleared")
        term.type("hello")
        term.keys("Enter")
        term.wait_for(lambda s: "Hi!" in s, "the answer")
        users = [m for m in fake_llm.requests[-1].body["messages"] if m["role"] == "user"]
        assert "refactor the parser" not in str(users) and "hello" in str(users)
    finally:
        term.close()


def test_ctrl_d_during_a_run_asks_before_quitting(tmp_path: Path, workspace: Path,
                                                  fake_llm: FakeLLMServer) -> None:
    slow = " ".join(f"word{i}" for i in range(3000))
    fake_llm.enqueue(Reply.text(slow, chunk_size=6, chunk_delay=0.02))
    term: Terminal = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=110, height=30)
    try:
        term.wait_for(ready, "the prompt", timeout=60)
        term.type("tell me a long story")
        term.keys("Enter")
        term.wait_for(lambda s: "word20" in s, "streaming text")
        term.keys("C-d")
        screen = term.wait_for(lambda s: "Ctrl+D again to stop it and quit" in s, "the question")
        assert "Ask Loom" in screen or "esc to interrupt" in screen  # still open
        term.keys("C-d")
        term.wait_for(lambda s: "loom --continue" in s, "loom to quit and print the summary")
    finally:
        term.close()


def test_the_first_start_welcomes_and_later_ones_show_one_line(tmp_path: Path, workspace: Path,
                                                               fake_llm: FakeLLMServer) -> None:
    env = terminal_env(tmp_path, fake_llm)
    term = open_loom(workspace, env, width=100, height=30)
    try:
        screen = term.wait_for(lambda s: ready(s) and "Welcome to Loom" in s, "the welcome", timeout=60)
        for words in ("Enter", "Esc", "Shift+Tab", "/help", "provider: anthropic", "model: claude-sonnet-4-5"):
            assert words in screen
        term.keys("C-d")
        term.wait_for(lambda s: "Ask Loom" not in s, "loom to quit")
    finally:
        term.close()
    term = open_loom(workspace, env, width=100, height=30)
    try:
        screen = term.wait_for(lambda s: ready(s) and "/help for commands" in s, "the one-line notice", timeout=60)
        assert "Welcome to Loom" not in screen
    finally:
        term.close()
