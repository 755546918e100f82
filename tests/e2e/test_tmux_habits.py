"""Issue 22 items 7, 8 and 10 in a real terminal at 120 and 60 columns: a refused edit
reads as refused, `!command` runs at once, an unknown command is named, /help lists a
project command and the skill it hides. Each scene starts at 120 columns and is read
again once the chat has redrawn it at 60 (one Loom start instead of one per width)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, drawn_to_the_edge, open_loom, terminal_env
from tests.e2e.test_tmux_permission import EDIT, READ, ask


def refused(screen: str) -> bool:
    return "refused, not applied" in screen and "refused, not run" in screen


def resumed(screen: str) -> bool:
    return all(t in screen for t in ("Understood, I will leave it.", "⊘ edit_file", "refused, not run",
                                     "refused, not applied"))


def ran(screen: str) -> bool:
    return "✓ bash" in screen and "made-it" in screen.split("✓ bash", 1)[1]


def unknown(screen: str) -> bool:
    return "unknown command /modle" in screen and "/help lists them" in screen


def listed(screen: str) -> bool:
    return "/skill:review" in screen and "Review as the team does" in screen


def _at_60(term: Terminal, height: int, predicate: Callable[[str], bool], what: str) -> str:
    term.resize(60, height)
    return term.wait_for(lambda s: drawn_to_the_edge(s) and predicate(s), f"{what} at 60 columns")


def test_n_refuses_the_edit_and_the_model_reads_a_refusal(tmp_path: Path, workspace: Path,
                                                          fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(READ, EDIT, Reply.text("Understood, I will leave it."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=120, height=40)
    try:
        term.wait_ready()
        ask(term, "change the greeting")
        term.keys("n")
        screen = term.wait_for(refused, "the refused block and the line under it")
        print(f"--- refused at 120 columns ---\n{screen}")
        assert "interrupted" not in screen
        term.wait_for(lambda s: "Ask Loom" in s and "esc to interrupt" not in s, "the prompt back")
        screen = _at_60(term, 40, refused, "the refused block and the line under it")
        print(f"--- refused at 60 columns ---\n{screen}")
        assert "interrupted" not in screen
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
    term = open_loom(workspace, env, args=("--continue",), width=120, height=40)
    try:
        screen = term.wait_for(resumed, "the resumed chat with the refused block")
        print(f"--- resumed at 120 columns ---\n{screen}")
        assert "interrupted" not in screen
        screen = _at_60(term, 40, resumed, "the resumed chat with the refused block")
        print(f"--- resumed at 60 columns ---\n{screen}")
        assert "interrupted" not in screen
    finally:
        term.close()


def test_a_bang_command_runs_at_once(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=120, height=30)
    try:
        term.wait_ready()
        term.type("!touch made.txt && echo made-it")
        term.keys("Enter")
        screen = term.wait_for(ran, "the command's block with its output")
        print(f"--- !command at 120 columns ---\n{screen}")
        assert "allow once" not in screen and "tell Loom why" not in screen  # no question
        screen = _at_60(term, 30, ran, "the command's block with its output")
        print(f"--- !command at 60 columns ---\n{screen}")
        assert "allow once" not in screen and "tell Loom why" not in screen
        assert (workspace / "made.txt").exists()
        assert fake_llm.requests == []
    finally:
        term.close()


def test_unknown_command_and_help_listing(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    commands = workspace / ".loom" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review as the team does\n---\nTeam review.\n")
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=120, height=60)
    try:
        term.wait_ready()
        term.type("/modle")
        term.keys("Escape", "Enter")  # Esc closes the / menu, Enter sends what was typed
        screen = term.wait_for(unknown, "the unknown-command line")
        print(f"--- unknown command at 120 columns ---\n{screen}")
        term.type("/help")
        term.keys("Escape", "Enter")
        screen = term.wait_for(listed, "/help")
        print(f"--- /help at 120 columns ---\n{screen}")
        screen = _at_60(term, 60, listed, "/help")
        print(f"--- /help at 60 columns ---\n{screen}")
        term.type("/modle")
        term.keys("Escape", "Enter")
        screen = term.wait_for(lambda s: unknown(s.split("Review as the team does")[-1]),
                               "the unknown-command line at 60 columns")
        print(f"--- unknown command at 60 columns ---\n{screen}")
        assert fake_llm.requests == []
    finally:
        term.close()
