"""The first answer streams without full-collection pauses: what start-up built (the agent,
the provider SDK's thousands of modules) is moved out of the collector's way once the
chat is ready, not only after the first run (a gen-2 scan of the SDK's objects stalled
keys typed during the first answer for 150-350 ms; see bench_tui's real-app rows)."""

from __future__ import annotations

import gc
from pathlib import Path

from loom_cli.tui.app import LoomApp
from tests.cli.tui.helpers import Harness, wait_for


async def test_startup_objects_are_frozen_before_the_first_prompt(workspace: Path, tmp_path: Path) -> None:
    harness = Harness(workspace=workspace, data_dir=tmp_path / "data", script=[])
    gc.unfreeze()  # the process may hold frozen objects from earlier tests
    app: LoomApp = harness.app(manage_gc=True)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.warm.is_set(), timeout=60)
            assert not app.running and app.agent is not None
            assert gc.get_freeze_count() > 0, "nothing frozen before the first answer"
    finally:
        gc.unfreeze()


async def test_without_gc_management_nothing_is_frozen(workspace: Path, tmp_path: Path) -> None:
    harness = Harness(workspace=workspace, data_dir=tmp_path / "data", script=[])
    gc.unfreeze()
    app: LoomApp = harness.app(manage_gc=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.warm.is_set(), timeout=60)
        assert gc.get_freeze_count() == 0
