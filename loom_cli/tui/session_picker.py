"""/resume: pick one of the workspace's earlier sessions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .commands import session_label


class SessionPicker(ModalScreen[str | None]):
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

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.dismiss(None)
