"""When rewind's snapshots cannot be taken in this workspace, the chat says so once, with
the reason and what /rewind can still do: git missing (at start), too many files or a
failed snapshot (when the first prompt's run ends). Not again at the next prompt, nor
after /clear. The agent is built by the real bootstrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_cli.tui.app import LoomApp
from loom_cli.tui.confirm import Confirm
from tests.cli.tui.helpers import wait_for, wait_idle
from tests.cli.tui.real_bootstrap import notices, real_app, real_bootstrap

ANSWERS = [{"text": "First answer."}, {"text": "Second answer."}]


async def _prompt(pilot: object, app: LoomApp, text: str) -> None:
    for key in text:
        await pilot.press(key)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: any(e.kind == "assistant" for e in app.transcript.entries))
    await wait_idle(pilot, app)


async def _clear(pilot: object, app: LoomApp) -> None:
    before = app.agent
    for key in "/clear":
        await pilot.press(key)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: isinstance(app.screen, Confirm) or app.agent is not before)
    if isinstance(app.screen, Confirm):  # more than one exchange: asked first
        await pilot.press("y")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: app.agent is not before and app.agent is not None and app.loaded.is_set())


async def test_too_many_files_is_said_once_after_the_first_prompt(repo: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    harness = real_bootstrap(monkeypatch, repo, tmp_path, ANSWERS)
    (tmp_path / "config" / "config.toml").write_text("[snapshots]\nmax_files = 2\n")
    app = real_app(harness)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        assert notices(app, "snapshot") == []  # not known before a snapshot is tried
        await _prompt(pilot, app, "hello")
        await wait_for(pilot, lambda: notices(app, "snapshot") != [])
        [line] = notices(app, "snapshot")
        assert line == "⚠ snapshots are off: more than 2 files here ([snapshots] max_files); /rewind can rewind only" \
                       " the conversation"
        await _prompt(pilot, app, "again")
        assert len(notices(app, "snapshot")) == 1
        await _clear(pilot, app)
        await _prompt(pilot, app, "after clear")
        assert notices(app, "snapshot") == []


async def test_without_git_the_chat_says_at_start_what_rewind_keeps(repo: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    harness = real_bootstrap(monkeypatch, repo, tmp_path, ANSWERS)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no git on it
    app = real_app(harness)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        assert notices(app, "git is not installed") == [
            "⚠ git is not installed: /rewind can restore the conversation, and only files Loom's edit tools changed"]
        await _prompt(pilot, app, "hello")
        assert len(notices(app, "git is not installed")) == 1
        await _clear(pilot, app)
        assert notices(app, "git is not installed") == []


async def test_a_failed_snapshot_is_said_once(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = real_bootstrap(monkeypatch, repo, tmp_path, ANSWERS)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "snapshots").write_text("a file where the snapshots' folder goes\n")
    app = real_app(harness)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        await _prompt(pilot, app, "hello")
        await wait_for(pilot, lambda: notices(app, "snapshot") != [])
        [line] = notices(app, "snapshot")
        assert line.startswith("⚠ a snapshot of the files failed (")
        assert line.endswith("); /rewind can still rewind the conversation, maybe not the files")
        await _prompt(pilot, app, "again")
        assert len(notices(app, "snapshot")) == 1


async def test_a_workspace_where_snapshots_work_gets_no_line(repo: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    app = real_app(real_bootstrap(monkeypatch, repo, tmp_path, ANSWERS))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        await _prompt(pilot, app, "hello")
        assert notices(app, "snapshot") == [] and notices(app, "git") == []
