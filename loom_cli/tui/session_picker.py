"""/resume: pick one of the workspace's earlier sessions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..wording import conversation_length
from .picker import PickerScreen

if TYPE_CHECKING:
    from loom_engine.sessions.store import SessionInfo


def session_label(info: SessionInfo) -> str:
    """One line per session: when, how long, the first prompt, the id."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
    prompt = info.first_prompt.strip().splitlines()
    first = prompt[0] if prompt else "(no prompt)"
    if len(first) > 60:
        first = first[:59] + "…"
    return f"{when}  {conversation_length(info.prompts):>11}  {first}  [{info.id}]"


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

    def __init__(self, sessions: Sequence[SessionInfo]) -> None:
        super().__init__()
        self.sessions = list(sessions)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Resume a session (Enter to open, Esc to cancel)", style="bold"))
            yield OptionList(*[Option(Text(session_label(s)), id=s.id) for s in self.sessions], id="sessions")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
