"""Issue 22 items 7, 8 and 10 in a real terminal at 120 and 60 columns: a refused edit
reads as refused, `!command` runs at once, an unknown command is named, /help lists a
project command and the skill it hides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import open_loom, terminal_env
from tests.e2e.test_tmux_permission import EDIT, READ, ask

WIDTHS = [120, 60]


@pytest.mark.parametrize("width", WIDTHS)
def test_n_refuses_the_edit_and_the_model_reads_a_refusal(tmp_path: Path, workspace: Path,
                                                          fake_llm: FakeLLMServer, width: int) -> None:
    fake_llm.enqueue(READ, EDIT, Reply.text("Understood, I will leave it."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=40)
    try:
        term.wait_ready()
        ask(term, "change the greeting")
        term.keys("n")
        screen = term.wait_for(lambda s: "refused, not applied" in s and "refused, not run" in s,
                               "the refused block and the line under it")
        print(f"--- refused at {width} columns ---\n{screen}")
        assert "interrupted" not in screen
        term.wait_for(lambda s: "Ask Loom" in s and "esc to interrupt" not in s, "the prompt back")
        term.type("why not?")
        term.keys("Enter")
        term.wait_for(lambda s: "Understood, I will leave it." in s, "the next answer")
        sent = json.dumps(fake_llm.requests[2].messages)
        assert "Refused by the user: this call was not run" in sent and "did not finish" not in sent
        assert 'return f"hello {name}"' in (workspace / "src" / "app.py").read_text()
        term.keys("C-d")
        term.wait_for(lambda s: "Ask Loom" not in s, "loom to quit")
    finally:
        term.close()
    # --continue draws the refusal as it was shown, not as an interruption.
    env = terminal_env(tmp_path, fake_llm)
    term = open_loom(workspace, env, args=("--continue",), width=width, height=40)
    try:
        screen = term.wait_for(lambda s: all(t in s for t in ("Understood, I will leave it.", "⊘ edit_file",
                                                                "refused, not run", "refused, not applied")),
                               "the resumed chat with the refused block")
        print(f"--- resumed at {width} columns ---\n{screen}")
        assert "interrupted" not in screen
    finally:
        term.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_bang_command_runs_at_once(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, width: int) -> None:
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=30)
    try:
        term.wait_ready()
        term.type("!touch made.txt && echo made-it")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "✓ bash" in s and "made-it" in s.split("✓ bash", 1)[1],
                               "the command's block with its output")
        print(f"--- !command at {width} columns ---\n{screen}")
        assert "allow once" not in screen and "tell Loom why" not in screen  # no question
        assert (workspace / "made.txt").exists()
        assert fake_llm.requests == []
    finally:
        term.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_unknown_command_and_help_listing(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                          width: int) -> None:
    commands = workspace / ".loom" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review as the team does\n---\nTeam review.\n")
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=60)
    try:
        term.wait_ready()
        term.type("/modle")
        term.keys("Escape", "Enter")  # Esc closes the / menu, Enter sends what was typed
        screen = term.wait_for(lambda s: "unknown command /modle" in s and "/help lists them" in s,
                               "the unknown-command line")
        print(f"--- unknown command at {width} columns ---\n{screen}")
        assert fake_llm.requests == []
        term.type("/help")
        term.keys("Escape", "Enter")
        screen = term.wait_for(lambda s: "/skill:review" in s and "Review as the team does" in s, "/help")
        print(f"--- /help at {width} columns ---\n{screen}")
    finally:
        term.close()
