"""How the chat words a conversation, live and resumed, at 120 and 60 columns: a markdown
task list shows its boxes, a loaded skill's block shows its text without the tag the
model reads it in (and `--continue` shows it the same), and /clear, /resume and the
resumed notice count the same prompts with the same word."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import loom_in_tmux, terminal_env

PLAN = "Plan:\n\n- [ ] write the test\n- [x] read the code\n\n1. [ ] ship it\n"


def flat(screen: str) -> str:
    """The screen's words on one line (a question wraps at 60 columns)."""
    return " ".join(screen.replace("│", " ").split())


def _skill(tmp_path: Path) -> None:
    folder = tmp_path / "claude-home" / "skills" / "greet"  # terminal_env's CLAUDE_CONFIG_DIR
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: greet\ndescription: Greets politely.\n---\nSay hello politely.\n")


def _looks_right(screen: str) -> None:
    """What both the live chat and the resumed one show."""
    rows = [row.strip() for row in screen.splitlines()]
    assert "☐ write the test" in rows and "☑ read the code" in rows and "1. ☐ ship it" in rows, screen
    assert "[ ]" not in screen and "[x]" not in screen
    assert "skill  greet  · Say hello politely." in screen and "<skill" not in screen and "</skill>" not in screen


@pytest.mark.parametrize("width", [120, 60])
def test_task_lists_skills_and_the_conversation_length_live_and_resumed(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, width: int) -> None:
    _skill(tmp_path)
    env = terminal_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.tool("skill", {"name": "greet"}), Reply.text(PLAN), Reply.text("Hello, politely."))
    with loom_in_tmux(workspace, env, args=["--permission-mode", "bypass"], width=width, height=40) as term:
        term.ask("make a plan")
        term.wait_for(lambda s: "ship it" in s and "Ask Loom" in s, "the plan")
        term.ask("/greet the team")
        screen = term.wait_for(lambda s: "Hello, politely." in s and "Ask Loom" in s, "the typed skill's answer")
        _looks_right(screen)
        term.keys("C-d")
        term.wait_for(lambda s: "Ask Loom" not in s, "loom to quit")
    with loom_in_tmux(workspace, env, args=["--continue"], width=width, height=40) as term:
        screen = term.wait_for(lambda s: "resumed session" in s and "Ask Loom" in s, "the resumed session")
        _looks_right(screen)
        assert "· 2 prompts" in screen
        term.type("/clear")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "start a new session?" in flat(s), "the /clear question")
        assert "(2 prompts)" in flat(screen) and "exchanges" not in screen
        term.type("y")
        term.wait_for(lambda s: "new session started" in s, "the new session")
        term.type("/resume")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "Resume a session" in s, "the list of sessions")
        row = next(line for line in screen.splitlines() if "make a plan" in line)
        assert "2 prompts" in row and "turns" not in screen
