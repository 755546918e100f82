"""In a real terminal: `!command` runs the user's shell command, `@file` attaches a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import open_loom, terminal_env


def _user_text(messages: list[dict]) -> str:
    return json.dumps([m["content"] for m in messages if m["role"] == "user"])


@pytest.mark.parametrize("width", [120, 60])
def test_bang_echo_shows_its_output_and_the_next_request_carries_it(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, width: int) -> None:
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=30)
    try:
        term.wait_for(lambda s: "Ask Loom" in s and "claude-sonnet-4-5" in s, "the prompt and status bar")
        term.type("!")
        term.wait_for(lambda s: "! shell command" in s, "the prompt saying it runs a shell command")
        term.type("echo hi-from-the-shell")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "✓ bash" in s and "hi-from-the-shell" in s.split("✓ bash", 1)[1],
                               "the command's block with its output", timeout=60)
        assert fake_llm.requests == []  # no model turn
        assert "! shell command" not in screen  # the prompt is back to normal
        fake_llm.enqueue(Reply.text("It printed a greeting."))
        term.type("what did it print?")
        term.keys("Enter")
        term.wait_for(lambda s: "It printed a greeting." in s, "the answer", timeout=60)
        sent = _user_text(fake_llm.last_request.messages)
        assert "$ echo hi-from-the-shell" in sent and "hi-from-the-shell\\nExit code: 0" in sent
    finally:
        term.close()


@pytest.mark.parametrize("width", [120, 60])
def test_at_file_attaches_the_content_and_shows_one_line(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, width: int) -> None:
    fake_llm.enqueue(Reply.text("It greets by name."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=30)
    try:
        term.wait_for(lambda s: "Ask Loom" in s and "claude-sonnet-4-5" in s, "the prompt and status bar")
        # In steps, each seen on screen: the file menu that "@" opens must have caught up
        # before Enter, or Enter would pick from it (a race of its own, not this test's).
        term.type("explain @src/app.py")
        term.wait_for(lambda s: "explain @src/app.py" in s, "the mention typed")
        term.type(" please")
        term.wait_for(lambda s: "@src/app.py please" in s, "the prompt typed")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "It greets by name." in s, "the answer", timeout=60)
        assert "📎 src/app.py (2 lines)" in screen
        assert "def greet" not in screen  # the content went to the model only
        [user] = fake_llm.last_request.messages
        texts = [block["text"] for block in user["content"]]
        assert texts[0] == "explain @src/app.py please"
        assert texts[1].startswith('<attached path="src/app.py"') and "def greet(name):" in texts[1]
    finally:
        term.close()
