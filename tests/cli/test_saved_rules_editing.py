"""Saved "allow always in this project" answers can be removed again (/permissions), and an
answer that saves no rule writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_cli.bootstrap import RunOptions, build_agent
from loom_cli.workspace_records import WorkspaceRecords
from tests.doubles.loom_command import isolate_loom


@pytest.fixture
def env(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_loom(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    return workspace


def test_a_removed_saved_rule_stays_removed_in_the_next_session(env: Path, tmp_path: Path) -> None:
    built = build_agent(RunOptions(cwd=env), interactive=True)
    built.agent.permissions.allow_for_project(["bash(make test)", "bash(make lint)"])
    built.agent.permissions.remove_rule("allow", "bash(make test)", "saved answers")
    built.agent.session.close()
    assert WorkspaceRecords(tmp_path / "data").saved_rules(env) == ("bash(make lint)",)
    again = build_agent(RunOptions(cwd=env), interactive=True)
    again.agent.session.close()
    saved = [r for r in again.agent.permissions.effective_rules() if r[2] == "saved answers"]
    assert saved == [("allow", "bash(make lint)", "saved answers")]


def test_saving_no_rules_writes_nothing(tmp_path: Path) -> None:
    records = WorkspaceRecords(tmp_path / "data")
    records.save_rules(tmp_path, [])
    assert not records.path.exists()
