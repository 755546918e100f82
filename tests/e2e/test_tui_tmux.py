"""End to end in a real terminal: the installed `loom` in tmux against the fake LLM server.

Each test runs its own tmux server (a private socket) so nothing else is touched, types
with `send-keys` and reads the screen with `capture-pane`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal


@pytest.fixture
def repo(workspace: Path) -> Path:
    return workspace  # src/app.py is the file the tests edit


def test_edit_approved_in_the_modal(terminal: Terminal, fake_llm: FakeLLMServer, repo: Path) -> None:
    fake_llm.enqueue(
        Reply.tool("read_file", {"path": "src/app.py"}, text="Let me look at the file."),
        Reply.tool("edit_file", {"path": "src/app.py", "old_string": "hello", "new_string": "howdy"}),
        Reply.text("I changed the greeting to **howdy**."),
    )
    terminal.wait_for(lambda s: "Ask Loom" in s and "claude-sonnet-4-5" in s, "the prompt and status bar")
    terminal.type("change the greeting")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "allow once" in s and "src/app.py" in s, "the permission modal")
    time.sleep(1.3)  # the modal ignores answer keys for a second (typing guard)
    terminal.keys("y")
    screen = terminal.wait_for(lambda s: "changed the greeting" in s, "the final answer")
    assert 'return f"howdy {name}"' in (repo / "src" / "app.py").read_text()
    assert "✓ edit_file  src/app.py" in screen and "+1 -1" in screen
    assert '- ' in screen and 'return f"hello {name}"' in screen  # the removed line
    assert 'return f"howdy {name}"' in screen  # the added line
    terminal.keys("C-d")
    terminal.wait_for(lambda s: "Ask Loom" not in s, "loom to exit")


def test_esc_interrupts_a_slow_stream_and_the_session_goes_on(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    slow = " ".join(f"word{i}" for i in range(3000))
    fake_llm.enqueue(Reply.text(slow, chunk_size=6, chunk_delay=0.02), Reply.text("Picked up where we left off."))
    terminal.wait_for(lambda s: "Ask Loom" in s and "claude-sonnet-4-5" in s, "the prompt")
    terminal.type("tell me a long story")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "word20" in s, "streaming text")
    terminal.keys("Escape")
    screen = terminal.wait_for(lambda s: "interrupted" in s, "the interrupted notice")
    assert "esc to interrupt" not in terminal.wait_for(lambda s: "esc to interrupt" not in s, "the run to stop")
    assert "word2999" not in screen
    terminal.type("go on")
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "Picked up where we left off." in s, "the next answer")
    # The next request carried the partial answer and was valid for the API.
    last = fake_llm.requests[-1].messages
    roles = [m["role"] for m in last]
    assert roles[0] == "user" and roles[-1] == "user"
    assert any("word1" in str(m.get("content")) for m in last if m["role"] == "assistant")
