"""A small yes/no question over the chat (e.g. /clear on a conversation worth keeping)."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class Confirm(ModalScreen[bool]):
    """Only `y` says yes: Enter is not an answer, so a burst of keys cannot confirm."""

    DEFAULT_CSS = """
    Confirm {
        align: center bottom;
    }
    Confirm > Vertical {
        width: 100%;
        height: auto;
        border: round $warning;
        background: $surface;
        padding: 0 1;
        margin: 0 0 1 0;
    }
    """

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question, style="bold"))
            if self.detail:
                yield Static(Text(self.detail, style="dim"))
            yield Static(Text.assemble(("y", "bold"), " yes   ", ("n", "bold"), " / ", ("esc", "bold"), " no"))

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if event.key == "y":
            self.dismiss(True)
        elif event.key in ("n", "escape"):
            self.dismiss(False)
