"""End to end in tmux: /resume lists the workspace's sessions, typing narrows them by the
search index (a word of an answer, half typed) with the snippet that matched, Enter opens
the top one; at 120 columns, then narrowed to 60."""

from __future__ import annotations

import os
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.saved_sessions import Exchange, save_session
from tests.doubles.terminal import drawn_to_the_edge, loom_in_tmux, terminal_env


def test_resume_filters_as_you_type_at_120_and_60_columns(tmp_path: Path, workspace: Path,
                                                          fake_llm: FakeLLMServer) -> None:
    sessions = tmp_path / "data" / "sessions"
    root = Path(os.path.realpath(workspace))
    wanted = save_session(sessions, root, [Exchange("why do uploads stall", answer=(
        "The multipart uploader waited on a semaphore that was never released; it is released now."),
        tools=[("edit_file", {"path": "src/upload/multipart.py"})])])
    save_session(sessions, root, [Exchange("rename the greeting function")])
    save_session(sessions, tmp_path / "elsewhere", [Exchange("semaphore in another project")])
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), width=120, height=40) as term:
        term.ask("/resume")
        term.wait_for(lambda s: "type to search" in s and "rename the greeting" in s, "the picker")
        term.type("semaph")
        screen = term.wait_for(lambda s: "rename the greeting" not in s and "never released" in s, "the filter")
        assert "why do uploads stall" in screen and "another project" not in screen
        assert any(line.strip("│ ").startswith("semaph") for line in screen.splitlines())  # what was typed
        term.resize(60, 40)
        narrow = term.wait_for(lambda s: drawn_to_the_edge(s) and "why do uploads" in s and "semaph" in s,
                               "the picker at 60 columns")
        assert all(len(line) <= 60 for line in narrow.splitlines())
        term.keys("Enter")
        term.wait_for(lambda s: "why do uploads stall" in s and "type to search" not in s, "the resumed session")
    assert wanted.id
