"""Hooks in the real chat (installed `loom` in tmux): a project's hooks in the start-up
question, `/hooks`, and an edited entry asked about again, at 120 and 60 columns."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.doubles.terminal import TMUX, open_loom, terminal_env

pytestmark = pytest.mark.skipif(not Path(TMUX).exists(), reason="tmux is not installed")

GUARD = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 5}]}]}}
FORMAT_TOML = '[[hooks.PostToolUse]]\nmatcher = "Write|Edit"\n[[hooks.PostToolUse.hooks]]\ncommand = "ruff format"\n'
GUARD_KEYS = 1.3  # answer keys are ignored for a second after the question opens (typing guard)


def _flat(screen: str) -> str:
    """The screen with each line's box border and padding gone (a wrapped line stays two)."""
    return "\n".join(line.strip(" │╭╮╰╯─") for line in screen.splitlines())


def _words(screen: str) -> str:
    """The screen's words, one space apart (a wrapped sentence reads as one)."""
    return " ".join(screen.replace("│", " ").split())


@pytest.mark.parametrize("width", [120, 60])
def test_project_hooks_question_then_slash_hooks(tmp_path: Path, workspace: Path, width: int) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(GUARD))
    (workspace / ".loom").mkdir()
    (workspace / ".loom" / "settings.toml").write_text(FORMAT_TOML)
    env = terminal_env(tmp_path, None)
    term = open_loom(workspace, env, width=width, height=40)
    try:
        screen = _flat(term.wait_for(lambda s: "would add 2 hooks." in _words(s), "the question", timeout=90))
        for expected in ("PreToolUse  Bash", '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
                         "from .claude/settings.json · timeout 5s", "PostToolUse  Write|Edit", "ruff format",
                         "from .loom/settings.toml", "y trust all of it"):
            assert expected in screen, expected
        time.sleep(GUARD_KEYS)
        term.keys("y")
        term.wait_ready()
        term.type("/hooks")
        term.keys("Enter")
        screen = _flat(term.wait_for(lambda s: "Hooks (2)" in s and "Esc close" in s, "/hooks", timeout=60))
        assert "PreToolUse  Bash  [trusted]" in screen and "PostToolUse  Write|Edit  [trusted]" in screen
        assert "not trusted" not in screen
        term.keys("Escape")
        term.wait_for(lambda s: "Hooks (2)" not in s, "/hooks closed")
    finally:
        term.close()

    # Trusted: the next start asks nothing; an edited entry is asked about again, alone.
    (workspace / ".loom" / "settings.toml").write_text(FORMAT_TOML.replace("ruff format", "black ."))
    again = open_loom(workspace, env, width=width, height=40)
    try:
        screen = _flat(again.wait_for(lambda s: "would add 1 hook." in _words(s), "the question again", timeout=90))
        assert "black ." in screen and "PostToolUse  Write|Edit  [new]" in screen and "guard.sh" not in screen
        time.sleep(GUARD_KEYS)
        again.keys("n")
        screen = _flat(again.wait_for(lambda s: "not trusted: left off" in s, "the left-off line", timeout=60))
        again.wait_ready()
        again.type("/hooks")
        again.keys("Enter")
        screen = _flat(again.wait_for(lambda s: "Hooks (2)" in s and "Esc close" in s, "/hooks", timeout=60))
        assert "PostToolUse  Write|Edit  [not trusted]" in screen and "PreToolUse  Bash  [trusted]" in screen
        assert "--trust-project-hooks" in screen.replace("\n", " ")
    finally:
        again.close()
