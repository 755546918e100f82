"""Memory in the chat, through the real start-up path (loom_cli.bootstrap, the scripted
provider): a memory write's block says what was saved; /memory lists and shows; at
/clear the proposed facts are asked about (kept on disk until answered) and only the
picked one is kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loom_cli.tui.app import LoomApp
from loom_cli.tui.memory_proposals import MemoryProposalsScreen
from loom_cli.tui.tool_block import ToolView
from loom_engine.memory.folder import MemoryFolder
from loom_engine.memory.promotion import load_proposals
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle
from tests.doubles.loom_command import isolate_loom

LONG = "The project builds with make and tests with pytest; " * 15
PROPOSALS = {"proposals": [{"path": "MEMORY.md", "text": "- Build with make.", "why": "said twice"},
                           {"path": "MEMORY.md", "text": "- Tests run with pytest -n 2.", "why": "used"}]}


async def _send(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


@pytest.fixture
def chat(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    isolate_loom(monkeypatch, tmp_path, script=[
        {"tool_calls": [{"name": "memory", "input": {"command": "create", "path": "/memories/MEMORY.md",
                                                      "file_text": "- Deploys need VPN.\n"}}]},
        {"text": LONG},
        {"text": json.dumps(PROPOSALS)},  # the promotion request at /clear
    ])
    # [memory] promote is left at its default: the chat asks.
    return Harness(workspace=repo, data_dir=tmp_path / "data", script=[])


async def test_write_list_show_and_promotion_at_clear(chat: Harness, repo: Path) -> None:
    app: LoomApp = chat.app(agent_factory=None, provider="scripted", model="scripted")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await _send(pilot, "remember that deploys need the VPN")
        await wait_idle(pilot, app)
        block = next(view for view in app.transcript.query(ToolView) if view.data.name == "memory")
        header = screen_text(app)
        assert "create /memories/MEMORY.md" in header and "saved to memory  +1 -0" in header
        assert "+ - Deploys need VPN." in header  # the new line, as a diff
        assert block.data.status == "done"

        await _send(pilot, "/memory")
        await wait_for(pilot, lambda: "1 memory file for this project:" in screen_text(app))
        await _send(pilot, "/memory show MEMORY.md")
        await wait_for(pilot, lambda: "/memories/MEMORY.md:" in screen_text(app))

        await _send(pilot, "/clear")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryProposalsScreen))
        screen = app.screen
        assert isinstance(screen, MemoryProposalsScreen)
        screen._guard_s = 0  # the guard against typed-ahead keys is tested by the trust box
        await wait_for(pilot, lambda: "Build with make." in screen_text(app) and "apply all" in screen_text(app))
        folder = MemoryFolder.for_project(repo)
        # While it asks, the proposals are on disk too: a chat killed now leaves them to review.
        [(_, waiting)] = load_proposals(folder)
        assert [proposal.text for proposal in waiting] == ["- Build with make.", "- Tests run with pytest -n 2."]
        await pilot.press("2", "enter")
        await wait_for(pilot, lambda: "pytest" in folder.index_text())
        assert folder.index_text() == "- Deploys need VPN.\n- Tests run with pytest -n 2.\n"  # only the one picked
        assert load_proposals(folder) == []  # answered: nothing left to review
        await wait_for(pilot, lambda: "/memories/MEMORY.md: added - Tests run with pytest" in screen_text(app))


async def test_quitting_asks_too_and_says_what_was_kept(chat: Harness, repo: Path) -> None:
    app: LoomApp = chat.app(agent_factory=None, provider="scripted", model="scripted")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await _send(pilot, "remember that deploys need the VPN")
        await wait_idle(pilot, app)
        await pilot.press("ctrl+d")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryProposalsScreen))
        app.screen._guard_s = 0  # type: ignore[attr-defined]
        await pilot.press("a")
        await wait_for(pilot, lambda: not app.is_running or app.memory_said not in (None, ""))
    assert app.memory_said is not None and "added - Build with make." in app.memory_said
    assert MemoryFolder.for_project(repo).index_text().splitlines() == [
        "- Deploys need VPN.", "- Build with make.", "- Tests run with pytest -n 2."]
