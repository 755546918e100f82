"""/rewind and Esc Esc in the chat: the list of prompts, the menu, and a rewind carried out
(pilot tests against a real agent with workspace snapshots), plus snapshots of the list
and the menu at 120 and 60 columns."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import OptionList

from loom_cli.tui.rewind_menu import RewindMenu, menu_choices
from loom_cli.tui.rewind_picker import RewindPicker
from loom_engine.snapshots.model import FileChange, RestorePlan, RestorePoint, Snapshot
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle

EDIT = {"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}}
READ = {"name": "read_file", "input": {"path": "src/app.py"}}
WRITE = {"name": "write_file", "input": {"path": "notes.txt", "content": "made by the assistant\n"}}
ORIGINAL = 'def greet(name):\n    return f"hello {name}"\n'


class SnapshotHarness(Harness):
    """The shared harness, with the workspace snapshots the real chat gets."""

    def __init__(self, *args: Any, snapshots: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.snapshots = snapshots

    def factory(self, options: Any) -> Any:
        from loom_engine.snapshots.checkpoints import Checkpointer

        agent = super().factory(options)
        if self.snapshots:
            agent.checkpoints = Checkpointer(options.workspace, self.data_dir / "snapshots")
        return agent


@pytest.fixture
def harness(repo: Path, tmp_path: Path) -> SnapshotHarness:
    return SnapshotHarness(workspace=repo, data_dir=tmp_path / "data", mode="bypass", script=[
        {"text": "Reading first.", "tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Greeting changed."},
        {"tool_calls": [WRITE]}, {"text": "Notes written."}])


async def send(pilot: Any, app: Any, text: str, answer: str) -> None:
    app.prompt.set_text(text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: answer in screen_text(app))
    await wait_idle(pilot, app)


async def two_prompts(pilot: Any, app: Any) -> None:
    await wait_idle(pilot, app)
    await send(pilot, app, "make greet say hi", "Greeting changed.")
    await send(pilot, app, "write some notes", "Notes written.")


async def test_rewind_to_prompt_1_restores_the_files_and_the_conversation(harness: SnapshotHarness, repo: Path) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        assert 'f"hi {name}"' in (repo / "src" / "app.py").read_text()
        assert (repo / "notes.txt").exists()
        app.prompt.set_text("/rewind")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker))
        text = screen_text(app)
        assert "make greet say hi" in text and "write some notes" in text
        assert "1 file changed" in text
        await pilot.press("up", "enter")  # the newest is highlighted: up to prompt 1
        await wait_for(pilot, lambda: isinstance(app.screen, RewindMenu))
        text = screen_text(app)
        assert "Restore code and conversation" in text and "Never mind" in text
        await pilot.press("enter")
        from loom_cli.tui.rewind_preview import RewindPreview

        await wait_for(pilot, lambda: isinstance(app.screen, RewindPreview))
        text = screen_text(app)
        assert "src/app.py" in text and "will be restored" in text
        assert "notes.txt" in text and "will be deleted (created since)" in text
        await pilot.press("y")
        await wait_for(pilot, lambda: "rewound" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == ORIGINAL
        assert not (repo / "notes.txt").exists()
        assert app.prompt.text == "make greet say hi"
        text = screen_text(app)
        assert "Greeting changed." not in text and "Notes written." not in text
        assert "restored 1 file, deleted 1 file" in text
