"""End to end in tmux against the fake LLM server: the model edits a file, the user presses
Esc Esc, picks the prompt, "Restore code and conversation", reads the preview, confirms —
the file on disk is back and the transcript is rewound, at 120 and 60 columns. Esc Esc
with text in the input does not open the list."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, loom_in_tmux, terminal_env

ORIGINAL = 'def greet(name):\n    return f"hello {name}"\n'


@pytest.fixture(params=[120, 60], ids=["120cols", "60cols"])
def terminal(request: pytest.FixtureRequest, tmp_path: Path, workspace: Path,
             fake_llm: FakeLLMServer) -> Iterator[Terminal]:
    # bypass: the edit needs no answer to a permission question.
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), args=["--permission-mode", "bypass"],
                      width=request.param, height=40) as term:
        yield term


def edit_the_greeting(terminal: Terminal, fake_llm: FakeLLMServer, workspace: Path) -> None:
    fake_llm.enqueue(Reply.tool("read_file", {"path": "src/app.py"}),
                     Reply.tool("edit_file", {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}),
                     Reply.text("Greeting changed."))
    terminal.ask("make greet say hi")
    terminal.wait_for(lambda s: "Greeting changed." in s, "the answer", timeout=60)
    assert 'f"hi {name}"' in (workspace / "src" / "app.py").read_text()


def test_esc_esc_rewinds_the_file_and_the_conversation(
        terminal: Terminal, fake_llm: FakeLLMServer, workspace: Path) -> None:
    edit_the_greeting(terminal, fake_llm, workspace)
    terminal.keys("Escape")
    terminal.keys("Escape")
    screen = terminal.wait_for(lambda s: "Rewind: go back" in s, "the list of prompts")
    assert "make greet say hi" in screen and "1 file changed" in screen
    terminal.keys("Enter")
    screen = terminal.wait_for(lambda s: "Restore code and conversation" in s, "the menu")
    assert "Restore conversation only" in screen and "Restore code only" in screen and "Never mind" in screen
    terminal.keys("Enter")
    screen = terminal.wait_for(lambda s: "will be restored" in s, "the preview")
    assert "src/app.py" in screen
    assert (workspace / "src" / "app.py").read_text() != ORIGINAL  # nothing changed before the confirmation
    terminal.keys("y")
    screen = terminal.wait_for(lambda s: "rewound code and conversation" in s, "the summary")
    assert (workspace / "src" / "app.py").read_text() == ORIGINAL
    assert "Greeting changed." not in screen and "edit_file" not in screen
    # The prompt is back in the input, to edit and send again.
    assert any("make greet say hi" in row and row.lstrip().startswith("│") for row in screen.splitlines()), screen


def test_esc_esc_with_text_in_the_input_does_not_open_the_list(
        terminal: Terminal, fake_llm: FakeLLMServer, workspace: Path) -> None:
    edit_the_greeting(terminal, fake_llm, workspace)
    terminal.type("draft")
    terminal.wait_for(lambda s: "draft" in s, "the typed text")
    terminal.keys("Escape")
    terminal.keys("Escape")
    terminal.type("Z")  # had the list opened, this key would have gone to it
    screen = terminal.wait_for(lambda s: "draftZ" in s, "the input to keep the keys")
    assert "Rewind: go back" not in screen
    assert 'f"hi {name}"' in (workspace / "src" / "app.py").read_text()


def test_a_rewind_made_before_a_restart_can_be_undone_after_it(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    env = terminal_env(tmp_path, fake_llm)
    with loom_in_tmux(workspace, env, args=["--permission-mode", "bypass"], width=100, height=40) as terminal:
        edit_the_greeting(terminal, fake_llm, workspace)
        terminal.type("/rewind")
        terminal.keys("Enter")
        terminal.wait_for(lambda s: "Rewind: go back" in s, "the list of prompts")
        terminal.keys("Enter")
        terminal.wait_for(lambda s: "Never mind" in s, "the menu")
        terminal.keys("Enter")
        terminal.wait_for(lambda s: "will be restored" in s, "the preview")
        terminal.keys("y")
        terminal.wait_for(lambda s: "rewound code and conversation" in s, "the summary")
        assert (workspace / "src" / "app.py").read_text() == ORIGINAL
        terminal.keys("C-d")
        terminal.wait_for(lambda s: "Ask Loom" not in s, "loom to quit")
    with loom_in_tmux(workspace, env, args=["--continue"], width=100, height=40) as terminal:
        terminal.wait_for(lambda s: "resumed session" in s and "Ask Loom" in s, "the resumed session", timeout=60)
        terminal.type("/rewind")
        terminal.keys("Enter")
        screen = terminal.wait_for(lambda s: "Undo the last rewind" in s, "the undo row")
        assert "files and conversation come back" in screen
        terminal.keys("Home")
        terminal.keys("Enter")
        terminal.wait_for(lambda s: "Undo the last rewind: put the files back" in s, "the undo preview")
        terminal.keys("y")
        screen = terminal.wait_for(lambda s: "rewind undone" in s, "the undo")
        assert 'f"hi {name}"' in (workspace / "src" / "app.py").read_text()
        assert "Greeting changed." in screen  # the conversation is back too
