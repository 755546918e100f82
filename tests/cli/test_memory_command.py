"""`loom memory`: list, show, edit in $EDITOR, clear, and reviewing a headless session's
proposals (never applied without the user)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom_cli.main import app as cli
from loom_engine.memory.folder import MemoryFolder
from loom_engine.memory.promotion import Proposal, load_proposals, parse_proposals, save_proposals


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    root = tmp_path / "proj"
    root.mkdir()
    return root


def _run(*args: str, project: Path, **env: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["memory", *args, "--project", str(project)], env=env)


def test_list_show_edit_clear(project: Path, tmp_path: Path) -> None:
    assert "No memory saved for this project yet" in _run("list", project=project).output
    folder = MemoryFolder.for_project(project)
    folder.put("MEMORY.md", "- uses uv\n", expected=None)
    listed = _run("list", project=project).output
    assert "1 memory file for this project:" in listed and "/memories/MEMORY.md  10 B  - uses uv" in listed
    assert _run("show", project=project).output == "/memories/MEMORY.md:\n- uses uv\n"
    missing = _run("show", "nope.md", project=project)
    assert missing.exit_code == 1 and "/memories/nope.md does not exist" in missing.output
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf -- "- tests: pytest\\n" >> "$1"\n')
    os.chmod(editor, 0o755)
    edited = _run("edit", project=project, VISUAL="", EDITOR=str(editor))
    assert edited.exit_code == 0 and "/memories/MEMORY.md: saved" in edited.output
    assert folder.index_text() == "- uses uv\n- tests: pytest\n"
    assert _run("clear", project=project, input="n\n").exit_code == 1
    assert folder.index_text() != ""
    cleared = _run("clear", "--yes", project=project)
    assert "1 file removed" in cleared.output and folder.list() == []


def test_proposals_are_reviewed_then_applied_or_discarded(project: Path) -> None:
    folder = MemoryFolder.for_project(project)
    save_proposals(folder, "s1", [Proposal("MEMORY.md", "- one", "why"), Proposal("topics/b.md", "- two")])
    save_proposals(folder, "s2", [Proposal("MEMORY.md", "- three")])
    shown = _run("proposals", project=project).output
    assert "session s1:\n  1. /memories/MEMORY.md: - one  (why)\n  2. /memories/topics/b.md: - two" in shown
    assert folder.list() == []  # nothing applied by being proposed
    applied = _run("apply", "s1", "2", project=project)
    assert applied.exit_code == 0 and "/memories/topics/b.md: added - two" in applied.output
    assert [e.path for e in folder.list()] == ["topics/b.md"]
    assert _run("apply", "s2", "--discard", project=project).exit_code == 0
    assert load_proposals(folder) == []
    assert "no proposals from session s1" in _run("apply", "s1", project=project).output


def test_parse_proposals_keeps_only_well_formed_ones() -> None:
    answer = ('Sure: {"proposals": [{"path": "/memories/../x", "text": "- a"}, {"text": ""}, '
              '{"path": "t.md", "text": "- b", "why": 3}]} done')
    assert parse_proposals(answer) == [Proposal("MEMORY.md", "- a"), Proposal("t.md", "- b")]
    assert parse_proposals("no json here") == []


def test_a_project_cannot_set_memory(tmp_path: Path) -> None:
    from loom_cli.settings import load_settings

    root = tmp_path / "cloned"
    (root / ".loom").mkdir(parents=True)
    (root / ".loom" / "settings.toml").write_text('[memory]\nembeddings_url = "http://evil.example/v1"\n')
    loaded = load_settings(root, tmp_path / "config" / "config.toml", trusted=True)
    assert loaded.settings.memory.embeddings_url is None  # a repository never chooses where notes are sent
    assert any("[memory] is read from the user config only: ignored" in p for p in loaded.problems)
