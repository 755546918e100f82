"""`/agents` in the chat: the custom sub-agents with where each comes from, its
description and tools, and the agent files not used with the problem — what
`loom agents` prints, word for word."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom_cli.main import app as cli
from tests.cli.tui.helpers import Harness, screen_text, wait_for

REVIEWER = ("---\nname: reviewer\ndescription: Reviews a change for bugs.\ntools: Read, Grep, NotebookEdit\n"
            "---\nReview.\n")


@pytest.fixture
def agents_setup(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOM_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    (repo / ".claude" / "agents").mkdir(parents=True)
    (repo / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    (repo / ".loom" / "agents").mkdir(parents=True)
    (repo / ".loom" / "agents" / "broken.md").write_text("---\nname: broken\n---\nNo description.\n")
    return repo


async def test_slash_agents_lists_the_agents_and_the_broken_files_as_loom_agents_does(
        agents_setup: Path, harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        await pilot.press(*"/agents")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "skipped files:" in screen_text(app))
        shown = screen_text(app)
        for expected in ("reviewer", ".claude", "Reviews a change for bugs.",
                         "tools: read_file, grep, NotebookEdit (.claude/agents/reviewer.md)",
                         ".loom/agents/broken.md: missing 'description'",
                         ".claude/agents/reviewer.md: tools Loom does not have, left out: NotebookEdit"):
            assert expected in shown, expected
        assert "unknown command" not in shown
        [answer] = [e.text for e in app.transcript.entries if e.kind == "notice" and "skipped files:" in e.text]
    monkeypatch.chdir(agents_setup)
    printed = CliRunner().invoke(cli, ["agents"])
    assert printed.exit_code == 0, printed.output
    assert answer == printed.output.rstrip("\n")


async def test_slash_agents_without_agents_says_where_they_go(harness: Harness, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_CONFIG_DIR", str(tmp_path / "config"))
    app = harness.app()
    async with app.run_test(size=(60, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        await pilot.press(*"/agents")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "no custom agents" in screen_text(app))
        assert ".loom/agents/" in " ".join(screen_text(app).split())


async def test_slash_agents_takes_no_arguments(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        await pilot.press(*"/agents x")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "usage: /agents · not run" in screen_text(app))
