"""Ctrl+R: search the prompt history, one line above the input.

Type to filter (newest match first), Ctrl+R for the next older match, Enter puts the
match in the prompt, Esc leaves the prompt as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.message import Message as TextualMessage
from textual.widgets import Static


def search_history(entries: Sequence[str], query: str) -> list[str]:
    """Entries containing ``query`` (any case), newest first, each once."""
    q = query.lower()
    seen: set[str] = set()
    found: list[str] = []
    for entry in reversed(entries):
        if entry in seen or q not in entry.lower():
            continue
        seen.add(entry)
        found.append(entry)
    return found


class HistorySearch(Static, can_focus=True):
    DEFAULT_CSS = """
    HistorySearch {
        height: 1;
        display: none;
        padding: 0 1;
        background: $boost;
    }
    HistorySearch.visible {
        display: block;
    }
    """

    class Picked(TextualMessage):
        """``text`` is None when the search was cancelled."""

        def __init__(self, text: str | None) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.entries: Sequence[str] = ()
        self.query_text = ""
        self.index = 0

    @property
    def is_open(self) -> bool:
        return self.has_class("visible")

    @property
    def matches(self) -> list[str]:
        return search_history(self.entries, self.query_text)

    @property
    def match(self) -> str | None:
        found = self.matches
        return found[self.index] if self.index < len(found) else None

    def open(self, entries: Sequence[str]) -> None:
        self.entries = list(entries)
        self.query_text = ""
        self.index = 0
        self.add_class("visible")
        self._redraw()
        self.focus()

    def older(self) -> None:
        if self.index + 1 < len(self.matches):
            self.index += 1
        self._redraw()

    def close(self, text: str | None) -> None:
        self.remove_class("visible")
        self.post_message(self.Picked(text))

    def _redraw(self) -> None:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("search history: ", style="bold")
        line.append(self.query_text)
        line.append("▏", style="blink")
        match = self.match
        if match is None:
            line.append("  no match" if self.entries else "  no history yet", style="dim")
        else:
            first = match.strip().splitlines()[0] if match.strip() else ""
            line.append(f"  → {first}", style="")
        line.append("   ctrl+r older · enter use · esc cancel", style="dim")
        self.update(line)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        match event.key:
            case "ctrl+r":
                self.older()
            case "enter":
                self.close(self.match)
            case "escape" | "ctrl+c" | "ctrl+g":
                self.close(None)
            case "backspace":
                self.query_text = self.query_text[:-1]
                self.index = 0
                self._redraw()
            case _ if event.character and event.is_printable:
                self.query_text += event.character
                self.index = 0
                self._redraw()
