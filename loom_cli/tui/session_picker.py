"""/resume: pick one of the workspace's earlier sessions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .picker import PickerScreen


def session_label(info: Any) -> str:
    """One line per session: when, how long, the first prompt, the id."""
    updated = getattr(info, "updated", None)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(updated)) if isinstance(updated, (int, float)) else ""
    prompt = str(getattr(info, "first_prompt", None) or "").strip().splitlines()
    first = prompt[0] if prompt else "(no prompt)"
    if len(first) > 60:
        first = first[:59] + "…"
    return f"{when}  {getattr(info, 'turns', None) or 0:>3} turns  {first}  [{getattr(info, 'id', None)}]"


class SessionPicker(PickerScreen):
    DEFAULT_CSS = """
    SessionPicker {
        align: center middle;
    }
    SessionPicker > Vertical {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    SessionPicker OptionList {
        height: auto;
        max-height: 20;
    }
    """

    def __init__(self, sessions: Sequence[Any]) -> None:
        super().__init__()
        self.sessions = list(sessions)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Resume a session (Enter to open, Esc to cancel)", style="bold"))
            yield OptionList(*[Option(Text(session_label(s)), id=str(getattr(s, "id", i)))
                               for i, s in enumerate(self.sessions)], id="sessions")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
