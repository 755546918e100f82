"""Snapshot of the first-run screen: the welcome and the setup note when no API key is set.

Update the stored SVGs after an intended visual change with `--snapshot-update`.
"""

from __future__ import annotations

from typing import Any

import pytest

from loom_engine.providers.base import ProviderError
from tests.cli.tui.helpers import Harness, screen_text, wait_for


def no_key_factory(_options: Any) -> Any:
    raise ProviderError("config", "ANTHROPIC_API_KEY is not set; export it")


@pytest.mark.parametrize("width", [100, 60])
def test_first_run_screen(snap_compare, harness: Harness, monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", "/home/user")
    monkeypatch.setenv("LOOM_CONFIG_DIR", "/home/user/.config/loom")
    app = harness.app(agent_factory=no_key_factory)
    app.show_welcome = True

    async def run_before(pilot) -> None:
        app.prompt.cursor_blink = False
        await wait_for(pilot, lambda: app.agent_error is not None)
        await wait_for(pilot, lambda: "export OPENAI_API_KEY" in screen_text(app))  # the setup note is drawn
        await pilot.pause()

    assert snap_compare(app, terminal_size=(width, 44), run_before=run_before)
