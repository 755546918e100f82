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
