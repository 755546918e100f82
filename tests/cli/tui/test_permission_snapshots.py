"""Snapshot tests (pytest-textual-snapshot) of the docked permission question at 120 and 60
columns: under a transcript that stays in view, with the diff and every choice on screen.

Update the stored SVGs after an intended visual change with `--snapshot-update`.
"""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from builtin_tools._files.diff import diff_labels, unified_diff
from loom_cli.tui.permission_prompt import PermissionPrompt, PromptReply
from loom_engine.events import PermissionRequested

OLD = 'def greet(name):\n    """Say hello."""\n    return f"hello {name}"\n\n\nprint(greet("world"))\n'
NEW = 'def greet(name: str) -> str:\n    """Say hi."""\n    return f"hi {name}"\n\n\nprint(greet("world"))\n'
DIFF = unified_diff(OLD, NEW, *diff_labels("src/app.py"))

EDIT = PermissionRequested(
    request_id="perm_1", call_id="c1", tool="edit_file",
    input={"path": "src/app.py", "old_string": "hello", "new_string": "hi"},
    reason="default mode: writing src/app.py needs approval",
    preview={"kind": "diff", "path": "src/app.py", "diff": DIFF},
    suggested_rules=("edit_file(./src/app.py)",))
LOOP = PermissionRequested(
    request_id="perm_2", call_id="c2", tool="bash", input={"command": "for i in 1 2 3; do echo $i; done"},
    reason="cannot check this command safely (bash 'for' construct); it needs approval",
    preview={"kind": "command", "command": "for i in 1 2 3; do echo $i; done"})


class DockedApp(App[None]):
    """A transcript, the docked question and a status line, as the chat lays them out."""

    CSS = "Screen { layout: vertical; } #transcript { height: 1fr; }"

    def __init__(self, request: PermissionRequested) -> None:
        super().__init__()
        self.request = request
        self.replies: list[PromptReply] = []

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="transcript"):
            yield Static(Text("█ make greet say hi", style="bold"))
            yield Static(Text("\nI'll read the file first, then fix the greeting.\n"))
            yield Static(Text(" ✓ read_file  src/app.py  · 6 lines\n"))
            yield Static(Text(" ? edit_file  src/app.py  · awaiting your approval"))
        yield PermissionPrompt(id="permission")
        yield Static(" claude-sonnet-4-5 · default (shift+tab) · ctx 3%", id="status")

    def on_mount(self) -> None:
        self.query_one(PermissionPrompt).open(self.request, guard_s=0.0, on_reply=self.replies.append)


@pytest.mark.parametrize("width", [120, 60])
def test_docked_edit_question(snap_compare, width: int) -> None:
    assert snap_compare(DockedApp(EDIT), terminal_size=(width, 34))


def test_docked_command_question_without_a_rule(snap_compare) -> None:
    assert snap_compare(DockedApp(LOOP), terminal_size=(60, 24))
