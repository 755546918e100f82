"""What the end-to-end tests share: loom in tmux against the fake LLM server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.terminal import Terminal, loom_in_tmux, terminal_env


@pytest.fixture
def terminal(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> Iterator[Terminal]:
    """The chat in the test workspace, 120 columns wide, against the fake server."""
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), width=120) as term:
        yield term
