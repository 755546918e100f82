"""In a real terminal: a custom command in the / menu, and run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import open_loom, terminal_env


def _fix(root: Path) -> None:
    folder = root / ".loom" / "commands"
    folder.mkdir(parents=True)
    (folder / "fix.md").write_text("---\ndescription: Fix an issue by its number\nargument-hint: [issue]\n---\n"
                                   "Fix issue #$ARGUMENTS (first argument: $0).\n")


@pytest.mark.parametrize("width", [120, 60])
def test_the_menu_offers_the_command_and_running_it_sends_the_expansion(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, width: int) -> None:
    _fix(workspace)
    fake_llm.enqueue(Reply.text("Issue 123 is fixed."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=30)
    try:
        term.wait_for(lambda s: "Ask Loom" in s and "claude-sonnet-4-5" in s, "the prompt and status bar")
        term.type("/fi")
        screen = term.wait_for(lambda s: "/fix " in s or "/fix\n" in s or "/fix  " in s, "the menu with /fix")
        assert "Fix an issue" in screen  # its description (cut to the width at 60 columns)
        if width == 120:
            assert "Fix an issue by its number  [issue]" in screen
        term.keys("Tab")
        term.wait_for(lambda s: "/fix " in s and "Fix an issue" not in s, "the command completed")
        term.type("123")
        term.wait_for(lambda s: "/fix 123" in s, "the arguments typed")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "Issue 123 is fixed." in s, "the answer", timeout=60)
        assert "/fix 123" in screen and "unknown command" not in screen
        assert "Fix issue #123" not in screen  # the expansion is for the model
        [user] = fake_llm.last_request.messages
        content = user["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        assert text == "Fix issue #123 (first argument: 123)."
    finally:
        term.close()
