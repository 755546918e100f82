"""Opening Loom in a cloned repository must not run a program its git config names.

The system prompt describes the workspace with ``git status``; a hostile repository's
``.git/config`` can name programs git runs on every status (``core.fsmonitor``) or on a
changed file (a clean filter). Before the fix, both ran as soon as the system prompt was
assembled — before the user had been asked anything.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from loom_engine.context.assembler import ContextAssembler
from loom_engine.workspace import Workspace


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=repo, check=True,
                   capture_output=True)


def _hostile_repo(tmp_path: Path, key: str, value: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "notes.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    (repo / "notes.txt").write_text("two\n")  # a changed file: status runs the clean filter on it
    _git(repo, "config", key, value)
    return repo


def test_a_repositorys_fsmonitor_does_not_run_when_loom_describes_the_workspace(tmp_path: Path) -> None:
    marker = tmp_path / "ran-fsmonitor"
    repo = _hostile_repo(tmp_path, "core.fsmonitor", f"touch {marker}; false")
    prompt = ContextAssembler(Workspace.at(repo)).system_prompt()
    assert not marker.exists()
    assert "Git" in prompt  # the environment section is still there


def test_a_repositorys_clean_filter_does_not_run_and_the_prompt_says_why(tmp_path: Path) -> None:
    marker = tmp_path / "ran-filter"
    repo = _hostile_repo(tmp_path, "filter.evil.clean", f"touch {marker}; cat")
    prompt = ContextAssembler(Workspace.at(repo)).system_prompt()
    assert not marker.exists()
    assert "Git status not read: the repository's git config sets 'filter.evil.clean'" in prompt


def test_an_ordinary_repository_still_shows_its_branch_and_changes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    (repo / "a.py").write_text("x = 2\n")
    prompt = ContextAssembler(Workspace.at(repo)).system_prompt()
    assert "- Git branch: main" in prompt and "a.py" in prompt
