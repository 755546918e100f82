"""A command the model asks to run outside the sandbox, in a real terminal: the question
says so and why, at 120 and 60 columns (one question, read at both), even in bypass mode."""

from __future__ import annotations

import time
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import drawn_to_the_edge, open_loom, terminal_env

WHY = "npm needs ~/.npm"


def test_the_question_says_it_runs_outside_and_why(tmp_path: Path, workspace: Path,
                                                   fake_llm: FakeLLMServer) -> None:
    marker = tmp_path / "ran-outside"
    call = Reply.tool("bash", {"command": f"touch {marker}", "description": WHY,
                               "dangerously_disable_sandbox": True}, text="Running it outside.")
    fake_llm.enqueue(call, Reply.text("Done."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), args=("--permission-mode", "bypass"),
                     width=120, height=40)
    try:
        term.ask("install the packages")
        for width in (120, 60):  # one question, read again once redrawn at 60 columns
            term.resize(width, 40)
            # Textual may draw the box at the new width a frame before the question inside is
            # wrapped again (its old lines cut at the border), so the wait is for the words too.
            screen = term.wait_for(lambda s: "allow once" in s and drawn_to_the_edge(s)
                                   and "OUTSIDE the sandbox" in _flat(s) and WHY in _flat(s),
                                   f"the permission question at {width} columns")
            assert all(len(row) <= width for row in screen.splitlines()), screen
            print(f"--- the question at {width} columns ---\n{screen}")
        assert not marker.exists()
        time.sleep(1.3)  # answer keys are ignored for a second (typing guard); not an assertion
        term.keys("y")
        term.wait_for(lambda s: "Done." in s, "the final answer")
        assert marker.exists()
    finally:
        term.close()


def _flat(screen: str) -> str:
    return " ".join(screen.replace("│", " ").split())
