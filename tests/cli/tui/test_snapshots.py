"""Snapshot tests (pytest-textual-snapshot): main screen, a diff block (the docked permission
question has its own, in test_permission_snapshots.py).

Update the stored SVGs after an intended visual change with `--snapshot-update`.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from builtin_tools._files.diff import diff_labels, unified_diff
from loom_cli.tui.tool_block import ToolBlock, ToolCallData
from tests.cli.tui.helpers import Harness, wait_for, wait_idle

OLD = 'def greet(name):\n    """Say hello."""\n    return f"hello {name}"\n\n\nprint(greet("world"))\n'
NEW = 'def greet(name: str) -> str:\n    """Say hi."""\n    return f"hi {name}"\n\n\nprint(greet("world"))\n'
DIFF = unified_diff(OLD, NEW, *diff_labels("src/app.py"))


def test_main_screen(snap_compare, harness: Harness) -> None:
    harness.mode = "accept-edits"
    harness.script = [
        {"text": "I'll read the file first.", "tool_calls": [{"name": "read_file", "input": {"path": "src/app.py"}}],
         "usage": {"input_tokens": 1800, "output_tokens": 40}},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hello",
                                                         "new_string": "hi"}}],
         "usage": {"input_tokens": 300, "output_tokens": 30, "cache_read_input_tokens": 1800}},
        {"text": "## Done\n\n`greet` now says **hi**:\n\n```python\ngreet(\"Ada\")  # 'hi Ada'\n```\n\n"
                 "- edited `src/app.py`\n- no other files changed\n",
         "usage": {"input_tokens": 200, "output_tokens": 60, "cache_read_input_tokens": 2100}},
    ]
    app = harness.app(permission_mode="accept-edits")

    async def run_before(pilot) -> None:
        app.prompt.cursor_blink = False
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"make greet say hi", "enter")
        await wait_idle(pilot, app)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(100, 44), run_before=run_before)


class DiffBlockApp(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield ToolBlock(ToolCallData(call_id="c1", name="edit_file",
                                         input={"path": "src/app.py", "old_string": "hello", "new_string": "hi"},
                                         status="done", content="Edited src/app.py (1 replacement).",
                                         display={"kind": "diff", "path": "src/app.py", "diff": DIFF}))


def test_diff_block(snap_compare) -> None:
    assert snap_compare(DiffBlockApp(), terminal_size=(90, 16))
