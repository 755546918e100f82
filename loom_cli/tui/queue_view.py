"""The prompts waiting for the running turn to end, shown dimmed above the input."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from .paste import Draft

SHOWN = 3  # the newest queued prompts listed; older ones are counted
LINE_CHARS = 200


def queue_text(queued: Sequence[Draft]) -> Text:
    drafts = list(queued)
    text = Text(no_wrap=True, overflow="ellipsis")
    hidden = len(drafts) - SHOWN
    if hidden > 0:
        text.append(f"  … {hidden} more queued\n", style="dim")
    for draft in drafts[-SHOWN:]:
        lines = draft.text.strip().splitlines() or [""]
        first = lines[0][:LINE_CHARS]
        more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        text.append("  queued ", style="dim bold")
        text.append(first + more, style="dim")
        text.append("\n")
    text.append("  ↑ edits the last · esc interrupts and takes them back", style="dim italic")
    return text


class QueueView(Static):
    DEFAULT_CSS = """
    QueueView {
        height: auto;
        max-height: 5;
        display: none;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    QueueView.visible {
        display: block;
    }
    """

    def show_queue(self, drafts: Sequence[Draft]) -> None:
        self.set_class(bool(drafts), "visible")
        if drafts:
            self.update(queue_text(drafts))
