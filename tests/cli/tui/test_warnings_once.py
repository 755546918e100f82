"""Start-up warnings are shown once per chat: /clear and /resume build a new agent (and
bootstrap says its warnings again), but a warning the chat showed already is not
repeated; a new one (a file changed meanwhile) still shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_cli.tui.app import LoomApp
from tests.cli.tui.helpers import wait_for
from tests.cli.tui.real_bootstrap import notices, real_app, real_bootstrap


async def _new_agent(pilot: object, app: LoomApp, command: str) -> None:
    before = app.agent
    for key in command:
        await pilot.press(key)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: app.agent is not None and app.agent is not before and app.loaded.is_set())


async def test_a_broken_agent_file_is_said_once_across_clear_and_resume_and_a_new_problem_shows(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = repo / ".loom" / "agents"
    agents.mkdir(parents=True)
    (agents / "broken.md").write_text("---\nname: broken\n---\nNo description.\n")
    app = real_app(real_bootstrap(monkeypatch, repo, tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        assert len(notices(app, "broken.md: skipped: missing 'description'")) == 1
        first_session = app.agent.session_id
        await _new_agent(pilot, app, "/clear")
        assert "new session started" in " ".join(e.text for e in app.transcript.entries)
        assert notices(app, "broken.md") == []
        await _new_agent(pilot, app, f"/resume {first_session}")
        assert notices(app, "broken.md") == []
        # The file changed: its new problem is news.
        (agents / "broken.md").write_text("---\nname: x\ndescription: [unclosed\n---\nBody\n")
        await _new_agent(pilot, app, "/clear")
        assert len(notices(app, "broken.md: skipped: invalid YAML front matter")) == 1
