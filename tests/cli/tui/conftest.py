from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.tui.helpers import Harness


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The shared workspace, with a second source file and some ignored files."""
    root = workspace
    (root / "src" / "util.py").write_text("X = 1\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("ignored\n")
    (root / "debug.log").write_text("ignored\n")
    return root


@pytest.fixture
def harness(repo: Path, tmp_path: Path) -> Harness:
    return Harness(workspace=repo, data_dir=tmp_path / "data", script=[])


@pytest.fixture(autouse=True)
def _no_call_times_in_snapshots(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A screenshot never shows a tool call's time: it passes a second only on a loaded
    machine, and the picture must not depend on how busy the machine was."""
    if "snap_compare" in request.fixturenames:
        from loom_cli.tui import tool_block

        monkeypatch.setattr(tool_block, "SHOW_DURATION_FROM_MS", float("inf"))
