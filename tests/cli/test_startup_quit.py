"""Quitting the chat ends the process as `loom run` does: the terminal restored, the exit
handlers run, and no teardown of every imported module after that (it took as long as
the rest of quitting); checked with the marker hook of tests/e2e/test_headless_exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.terminal import TMUX, open_loom, terminal_env
from tests.e2e.test_headless_exit import marker_env


def loom_exited(command: str) -> bool:
    """The pane runs `loom; sleep 30`: once its command is the sleep, loom has exited."""
    return command.strip() == "sleep"


pytestmark = pytest.mark.skipif(not Path(TMUX).exists(), reason="tmux is not installed")


def test_ctrl_d_restores_the_terminal_and_skips_teardown(workspace: Path, tmp_path: Path,
                                                         fake_llm: FakeLLMServer) -> None:
    extra, markers = marker_env(tmp_path)
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm, **extra), width=120)
    try:
        term.wait_for(lambda s: "Loom ·" in s and "loading" not in s, "the chat to be ready", timeout=90)
        term.keys("C-d")
        term.wait_for(lambda s: "Loom ·" not in s, "the normal screen back")
        screen = term.wait_for(lambda _s: loom_exited(term.tmux("display-message", "-p", "-t", "loom",
                                                                "#{pane_current_command}")),
                               "loom to exit")
    finally:
        term.close()
    assert "Traceback" not in screen
    assert (markers / "atexit").exists(), "the exit handlers did not run"
    assert not (markers / "teardown").exists(), "the interpreter tore its modules down after the chat closed"
