"""A narrow terminal gives up the status bar's least useful parts first: the cost and the
context stay in view (they were the part cut off at 60 columns)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from loom_cli.tui.status_bar import StatusBar, StatusInfo, status_text
from loom_engine.usage import Usage

INFO = StatusInfo(model="claude-sonnet-4-5", mode="default", context_window=200_000,
                  usage=Usage(input_tokens=28_800, output_tokens=60, cache_read_input_tokens=1_000),
                  cost_usd=0.0873, mcp="2 MCP servers")


def test_wide_enough_shows_everything() -> None:
    line = status_text(INFO, 200).plain
    assert line == ("claude-sonnet-4-5 · default (shift+tab) · 2 MCP servers · ctx 0% · ↑29.8k ↓60 · $0.0873 · "
                    "cache 3%")


def test_narrow_drops_the_hint_then_cache_then_tokens_then_the_vendor_then_mcp() -> None:
    widths = {width: status_text(INFO, width).plain for width in (80, 70, 58, 40)}
    assert widths[80] == "claude-sonnet-4-5 · default · 2 MCP servers · ctx 0% · ↑29.8k ↓60 · $0.0873"
    assert widths[70] == "claude-sonnet-4-5 · default · 2 MCP servers · ctx 0% · $0.0873"
    assert widths[58] == "sonnet-4-5 · default · 2 MCP servers · ctx 0% · $0.0873"
    assert widths[40] == "sonnet-4-5 · default · ctx 0% · $0.0873"


class _Bar(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusBar(INFO)


async def test_the_bar_fits_its_width_and_refits_on_resize() -> None:
    app = _Bar()
    async with app.run_test(size=(60, 5)) as pilot:
        await pilot.pause()
        bar = app.query_one(StatusBar)
        shown = str(bar.render())
        assert "$0.0873" in shown and "(shift+tab)" not in shown
        await pilot.resize_terminal(140, 5)
        await pilot.pause()
        assert "(shift+tab)" in str(app.query_one(StatusBar).render())
