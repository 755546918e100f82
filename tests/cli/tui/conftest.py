from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.tui.helpers import Harness


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# demo\n\nA small project for tests.\n")
    (root / "src" / "app.py").write_text('def greet(name):\n    return f"hello {name}"\n')
    (root / "src" / "util.py").write_text("X = 1\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("ignored\n")
    (root / "debug.log").write_text("ignored\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def harness(repo: Path, tmp_path: Path) -> Harness:
    return Harness(workspace=repo, data_dir=tmp_path / "data", script=[])
