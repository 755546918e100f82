"""The chat and the sandbox: the status bar names its state (at 120 and 60 columns), a start
notice says why it cannot start and the fix, and `/sandbox` shows what `loom sandbox` prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom_cli import bootstrap
from loom_cli.main import app as cli
from loom_cli.tui.app import LoomApp
from loom_engine.sandbox import SandboxConfig, open_sandbox
from loom_engine.workspace import Workspace
from tests.cli.tui.helpers import screen_text, wait_for
from tests.cli.tui.real_bootstrap import notices, real_app, real_bootstrap
from tests.doubles.failing_sandbox import failing_machine, opening_on


def _confines_here(tmp_path: Path) -> bool:
    sandbox = open_sandbox(SandboxConfig(), Workspace.at(tmp_path))
    sandbox.close()
    return sandbox.status.backend == "bubblewrap"


def _bar(app: LoomApp) -> str:
    return str(app.status_bar.render())


async def _started(app: LoomApp, pilot: object) -> None:
    await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set(), timeout=60)


async def test_slash_sandbox_shows_what_loom_sandbox_prints(repo: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    app = real_app(real_bootstrap(monkeypatch, repo, tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await _started(app, pilot)
        await pilot.press(*"/sandbox")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(notices(app, "  mode        ")))
        [answer] = notices(app, "  mode        ")
        assert "unknown command" not in screen_text(app)
    monkeypatch.chdir(repo)
    printed = CliRunner().invoke(cli, ["sandbox"])
    assert printed.exit_code == 0, printed.output
    assert answer == printed.output.rstrip("\n")
    assert answer.startswith("sandbox: ") and "  mode        auto (default)" in answer


async def test_the_bar_says_sandboxed_where_it_works(repo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if not _confines_here(tmp_path):
        pytest.skip("bubblewrap cannot confine commands on this machine")
    app = real_app(real_bootstrap(monkeypatch, repo, tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await _started(app, pilot)
        await wait_for(pilot, lambda: "sandboxed" in _bar(app))
        assert "scripted · default (shift+tab) · sandboxed" in _bar(app)
        assert not notices(app, "sandbox")  # working as it should: nothing to say


@pytest.mark.parametrize("mode, said", [("auto", "commands run unconfined and ask first"),
                                        ("on", "commands are refused")])
async def test_where_it_cannot_start_a_notice_says_why_and_the_bar_says_no_sandbox_at_60_columns(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, said: str) -> None:
    monkeypatch.setattr(bootstrap, "open_session_sandbox", opening_on(failing_machine(tmp_path / "machine")))
    harness = real_bootstrap(monkeypatch, repo, tmp_path)
    monkeypatch.setenv("LOOM_SANDBOX", mode)
    app = real_app(harness)
    async with app.run_test(size=(60, 30)) as pilot:
        await _started(app, pilot)
        [notice] = notices(app, "sandbox: unavailable")
        assert notice == ("⚠ sandbox: unavailable — user namespaces are turned off (user.max_user_namespaces = 0; "
                          "bwrap said: Creating new namespace failed: Operation not permitted); "
                          f"{said}. Fix: sudo sysctl -w user.max_user_namespaces=15000")
        await wait_for(pilot, lambda: "no sandbox" in _bar(app))
        bar = app.status_bar.render()
        assert "scripted · default · no sandbox · ctx" in str(bar) and "$0.0000" in str(bar)
        shown = app.status.sandbox
        assert shown is not None and shown.refuses_commands is (mode == "on")  # red then, yellow in auto
        # /clear builds a new session and sandbox: the same line is not said twice.
        await pilot.press(*"/clear")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(notices(app, "new session started")))
        assert len(notices(app, "sandbox: unavailable")) <= 1


async def test_off_is_named_in_the_bar_and_not_warned_about(repo: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    harness = real_bootstrap(monkeypatch, repo, tmp_path)
    app = real_app(harness)
    app.options = harness.options(agent_factory=None, provider="scripted", model="scripted", sandbox="off")
    async with app.run_test(size=(60, 30)) as pilot:
        await _started(app, pilot)
        await wait_for(pilot, lambda: "sandbox off" in _bar(app))
        assert not notices(app, "sandbox")
