"""The sandbox in a real terminal: where it cannot start, the chat's start notice says why and
the fix, and the status bar says "no sandbox" — at 120 and, redrawn, at 60 columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doubles import no_sandbox
from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.terminal import drawn_to_the_edge, open_loom, terminal_env

pytestmark = pytest.mark.skipif(not no_sandbox.available(), reason="cannot make a machine without a sandbox here")


NOTICE = "⚠ sandbox: unavailable — user namespaces are turned off (user.max_user_namespaces = 0;"
FIX = "commands run unconfined and ask first. Fix: sudo sysctl -w user.max_user_namespaces=15000"


def _flat(screen: str) -> str:
    """The screen's words as one line: a notice wraps at the terminal's width."""
    return " ".join(line.strip(" │") for line in screen.splitlines() if line.strip(" │"))


def test_the_start_notice_and_the_bar_where_the_sandbox_cannot_start(tmp_path: Path, workspace: Path,
                                                                     fake_llm: FakeLLMServer) -> None:
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=120, height=40,
                     wrapper=no_sandbox.WITHOUT_SANDBOX)
    try:
        for width in (120, 60):  # one start, read again once redrawn at 60 columns
            term.resize(width, 40)
            # The bar and the notice redrawn too: tmux shows a wider drawing cut at the new edge
            # until the chat draws it again, which may come a frame after the prompt box.
            screen = term.wait_for(lambda s: "Ask Loom" in s and "no sandbox" in s and drawn_to_the_edge(s)
                                   and "$0.0000" in s.rstrip("\n").splitlines()[-1] and NOTICE in _flat(s)
                                   and FIX in _flat(s),
                                   f"the notice, the prompt and the bar at {width} columns", timeout=60)
            bar = screen.rstrip("\n").splitlines()[-1]
            assert "default" in bar and "no sandbox" in bar and "$0.0000" in bar, bar
            assert all(len(line) <= width for line in screen.splitlines())
    finally:
        term.close()
