"""Snapshot tests of a running command's block: its last lines, the count above, the time."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from loom_cli.tui.tool_block import ToolBlock, ToolCallData
from tests.cli.tui.helpers import wait_for

COMMAND = 'for i in $(seq 1 40); do echo "test_$i PASSED"; done; sleep 4'


class LiveTailApp(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            # The clock is fixed so the elapsed time in the header is always 12s.
            self.block = ToolBlock(ToolCallData(call_id="c1", name="bash", input={"command": COMMAND},
                                                started=88.0), clock=lambda: 100.0)
            yield self.block

    def on_mount(self) -> None:
        for i in range(1, 41):
            self.block.add_live_output(f"test_{i} PASSED")


async def _drawn(pilot) -> None:  # type: ignore[no-untyped-def]
    """Live output repaints on a timer: wait until the last line is in the block's view."""
    block = pilot.app.block
    await wait_for(pilot, lambda: "test_40 PASSED" in "\n".join(block.view.plain_lines()), timeout=60)
    await pilot.pause()


def test_live_bash_tail(snap_compare) -> None:
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _drawn(pilot)

    assert snap_compare(LiveTailApp(), terminal_size=(90, 12), run_before=run_before)


def test_live_bash_tail_narrow(snap_compare) -> None:
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _drawn(pilot)

    assert snap_compare(LiveTailApp(), terminal_size=(60, 12), run_before=run_before)
