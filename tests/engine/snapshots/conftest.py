"""Fixtures for the snapshot tests: a workspace that is a git repository with a commit."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from loom_engine.snapshots.checkpoints import Checkpointer
from loom_engine.snapshots.model import SnapshotCaps


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--no-optional-locks", "-c", "user.name=u", "-c", "user.email=u@x", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout


def tree_hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` -> its content's hash (links: their target)."""
    found: dict[str, str] = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            path = Path(parent) / name
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            found[str(path.relative_to(folder))] = hashlib.sha256(data).hexdigest()
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture
def make_checkpointer(tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(workspace: Path, caps: SnapshotCaps | None = None) -> Checkpointer:
        return Checkpointer(workspace, tmp_path / "data" / "snapshots", caps=caps)

    return make
