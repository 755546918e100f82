"""The context estimate refreshes after a call that may have changed files: the app asks
the tool's own declaration, not a list of names."""

from __future__ import annotations

from tests.cli.tui.helpers import Harness


def test_the_app_refreshes_after_tools_that_change_the_workspace(harness: Harness) -> None:
    app = harness.app()
    assert not app.changes_workspace("write_file")  # no agent yet
    app.agent = harness.factory(harness.options())
    changing = {name for name in app.agent.registry.names if app.changes_workspace(name)}
    assert changing == {"edit_file", "multi_edit", "write_file", "apply_patch", "bash", "memory"}
    assert not app.changes_workspace("no_such_tool")
