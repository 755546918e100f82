"""In the chat, what comes from Claude Code's user folder says so: `/agents` and `/skills`
at 120 and 60 columns, and its CLAUDE.md reaches the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import loom_in_tmux, terminal_env


def _claude_home(tmp_path: Path) -> Path:
    home = tmp_path / "claude-home"  # terminal_env's CLAUDE_CONFIG_DIR
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "planner.md").write_text("---\nname: planner\ndescription: Plans the work.\n---\nPlan.\n")
    (home / "skills" / "tidy").mkdir(parents=True)
    (home / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidies imports.\n---\nTidy.\n")
    (home / "CLAUDE.md").write_text("CLAUDE-HOME-MARKER: answer in English.\n")
    return home


@pytest.mark.parametrize("width", [120, 60])
def test_agents_and_skills_from_the_claude_folder_name_it(tmp_path: Path, workspace: Path,
                                                        fake_llm: FakeLLMServer, width: int) -> None:
    _claude_home(tmp_path)
    fake_llm.enqueue(Reply.text("hello there"))
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), width=width) as term:
        term.wait_ready(timeout=60)
        term.type("/agents")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "Plans the work." in s, "the agents list", 30)
        row = next(line for line in screen.splitlines() if "planner" in line)
        assert "~/.claude" in row
        term.type("/skills")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "Tidies imports." in " ".join(s.split()), "the skills list", 30)
        assert "[~/.claude]" in "".join(line.strip() for line in screen.splitlines()[-20:])
        term.ask("hi")
        term.wait_for(lambda s: "hello there" in s, "the answer", 60)
    assert "CLAUDE-HOME-MARKER" in str(fake_llm.requests[0].body["system"])
