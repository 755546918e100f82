"""In the chat, a custom agent's task block names the agent, at 120 and at 60 columns;
a skipped agent file is named once at start-up, relative to the project."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import loom_in_tmux, terminal_env

REVIEWER = "---\nname: reviewer\ndescription: Reviews code for bugs.\ntools: Read, Grep\n---\nYou are the REVIEWER.\n"


@pytest.mark.parametrize("width", [120, 60])
def test_the_task_block_names_the_agent(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                        width: int) -> None:
    (workspace / ".claude/agents").mkdir(parents=True)
    (workspace / ".claude/agents/reviewer.md").write_text(REVIEWER)
    (workspace / ".loom/agents").mkdir(parents=True)
    (workspace / ".loom/agents/broken.md").write_text("---\nname: broken\n---\nx\n")
    fake_llm.enqueue(Reply.tool("task", {"description": "review app", "prompt": "Review src/app.py",
                                         "subagent_type": "reviewer"}),
                     Reply.tool("read_file", {"path": "src/app.py"}), Reply.text("greet is fine: src/app.py:1"),
                     Reply.text("The reviewer found nothing."))
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), width=width) as term:
        screen = term.wait_ready(timeout=60)
        assert "agent file .loom/agents/broken.md: skipped: missing 'description'" in " ".join(
            line.strip() for line in screen.splitlines())
        term.ask("review the app")
        screen = term.wait_for(lambda s: "The reviewer found nothing." in s, "the answer", 60)
    assert "✓ task  reviewer: review app" in screen
    assert "✓ read_file  src/app.py" in screen
    child = fake_llm.requests[1]
    assert sorted(t["name"] for t in child.body["tools"]) == ["grep", "read_file"]
