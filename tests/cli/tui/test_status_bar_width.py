"""A narrow terminal gives up the status bar's least useful parts first: the cost and the
context stay in view (they were the part cut off at 60 columns)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.app import App, ComposeResult

from loom_cli.tui.status_bar import StatusBar, StatusInfo, status_text
from loom_engine.sandbox.status import SandboxStatus
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


ON = SandboxStatus(mode="auto", backend="bubblewrap", network="off", detail="bubblewrap 0.11.0")
MISSING = SandboxStatus(mode="auto", backend=None, network="off", reason="user namespaces are blocked",
                        fix="sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")


def test_the_sandbox_is_named_after_the_mode_and_sandboxed_goes_before_the_vendor() -> None:
    info = replace(INFO, sandbox=ON)
    assert status_text(info, 200).plain == ("claude-sonnet-4-5 · default (shift+tab) · sandboxed · 2 MCP servers · "
                                           "ctx 0% · ↑29.8k ↓60 · $0.0873 · cache 3%")
    assert status_text(info, 80).plain == ("claude-sonnet-4-5 · default · sandboxed · 2 MCP servers · ctx 0% · "
                                          "$0.0873")
    assert status_text(info, 58).plain == "sonnet-4-5 · default · 2 MCP servers · ctx 0% · $0.0873"


@pytest.mark.parametrize("status, words", [
    (MISSING, "no sandbox"), (replace(MISSING, mode="on"), "no sandbox"),
    (SandboxStatus(mode="off", backend=None, network="off"), "sandbox off")])
def test_a_missing_sandbox_outlasts_the_mcp_state_at_60_columns(status: SandboxStatus, words: str) -> None:
    info = replace(INFO, sandbox=status)
    assert status_text(info, 58).plain == f"sonnet-4-5 · default · {words} · ctx 0% · $0.0873"
    assert status_text(info, 40).plain == "sonnet-4-5 · default · ctx 0% · $0.0873"


def test_a_sandbox_that_refuses_commands_is_red() -> None:
    refusing = status_text(replace(INFO, sandbox=replace(MISSING, mode="on")), 58)
    auto = status_text(replace(INFO, sandbox=MISSING), 58)
    styles = {str(span.style) for span in refusing.spans if refusing.plain[span.start:span.end] == "no sandbox"}
    assert styles == {"bold red"}
    assert {str(span.style) for span in auto.spans if auto.plain[span.start:span.end] == "no sandbox"} == {"yellow"}
