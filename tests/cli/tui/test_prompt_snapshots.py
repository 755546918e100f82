"""Snapshot tests of the prompt area: a collapsed paste and the model picker.

Update the stored SVGs after an intended visual change with `--snapshot-update`.
"""

from __future__ import annotations

from textual import events

from loom_cli.tui.model_picker import ModelPicker
from tests.cli.tui.helpers import Harness, wait_for, wait_idle

PASTED = "\n".join(f"E   AssertionError at step {i}" for i in range(1, 301))


def test_collapsed_paste_in_the_input_and_the_transcript(snap_compare, harness: Harness) -> None:
    harness.script = [{"text": "The assertion at step 1 fails first; the rest follow from it."}]
    app = harness.app()

    async def run_before(pilot) -> None:
        app.prompt.cursor_blink = False
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"why? ")
        app.post_message(events.Paste(PASTED))
        await pilot.pause()
        await pilot.press("enter")
        await wait_idle(pilot, app)
        await pilot.press(*"and this one: ")
        app.post_message(events.Paste(PASTED))
        await wait_for(pilot, lambda: "and this one: [pasted text" in app.prompt.text)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)


def test_model_picker(snap_compare, harness: Harness) -> None:
    app = harness.app()

    async def run_before(pilot) -> None:
        app.prompt.cursor_blink = False
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"/model", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)
