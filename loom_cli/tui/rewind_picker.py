"""/rewind and Esc Esc: the session's prompts to go back to, oldest first, the last one
highlighted (the list ends where the conversation is now, as in Claude Code).

Each row: the prompt's number and time, its first line (cut to fit), and how many files
its run changed — or that no snapshot of the files was taken then. An "undo" row comes
first when the last rewind of this chat can be taken back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from loom_engine.snapshots.model import RestorePoint

from ..wording import plural
from .picker import PickerScreen

UNDO_ID = "undo"
# The keys held while the list was on its way go free this long after it is mounted, if
# the frame that draws it has not freed them already.
SHOWN_AT_THE_LATEST_S = 0.5


def one_line(text: str) -> str:
    """A prompt on one line: its first non-empty line, with a mark when more follows."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "(empty prompt)"
    return lines[0] + (" …" if len(lines) > 1 else "")


def files_label(point: RestorePoint) -> str:
    if not point.can_restore_code:
        return "no snapshot"
    if not point.files_changed:
        return "no files"
    return plural(len(point.files_changed), "file") + " changed"


def when(point: RestorePoint) -> str:
    return time.strftime("%H:%M", time.localtime(point.time)) if point.time is not None else "--:--"


def point_row(point: RestorePoint) -> Table:
    """One row that fits any width: the prompt's text is what gets cut."""
    row = Table.grid(padding=(0, 1), expand=True)
    row.add_column(no_wrap=True)
    row.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    row.add_column(no_wrap=True, justify="right")
    style = "" if point.can_restore_code else "dim"
    row.add_row(Text(f"{point.index:>2}. {when(point)}", style="dim"), Text(one_line(point.text)),
                Text(files_label(point), style=style or "cyan"))
    return row


class RewindPicker(PickerScreen):
    """Enter picks a prompt (its option id is its number) or the undo row; Esc cancels."""

    DEFAULT_CSS = """
    RewindPicker {
        align: center middle;
    }
    RewindPicker > Vertical {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    RewindPicker OptionList {
        height: auto;
        max-height: 20;
    }
    """

    def __init__(self, points: Sequence[RestorePoint], undo: str | None = None,
                 on_shown: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.points = list(points)
        self.undo = undo  # what undoing the last rewind does, in words (None: nothing to undo)
        self._on_shown = on_shown  # called once the list is drawn (the keys held till then are dropped)

    def compose(self) -> ComposeResult:
        options: list[Option] = []
        if self.undo is not None:
            options.append(Option(Text.assemble(("↶ Undo the last rewind", "bold"), (f" {self.undo}", "dim")),
                                  id=UNDO_ID))
        options += [Option(point_row(p), id=str(p.index)) for p in self.points]
        with Vertical():
            yield Static(Text("Rewind: go back to just before a prompt", style="bold"))
            yield OptionList(*options, id="points")
            yield Static(Text("Enter picks · Esc cancels", style="dim"))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            options.highlighted = options.option_count - 1  # the newest prompt
        options.focus()
        if self._on_shown is not None:
            # Right after the frame that draws the list (not "after refresh", which waits
            # for an idle moment a busy screen may not have). The timer is only a net: keys
            # are never held for long, whatever the screen does.
            self.screen_layout_refresh_signal.subscribe(self, lambda _screen: self._shown(), immediate=True)
            self.set_timer(SHOWN_AT_THE_LATEST_S, self._shown)

    def _shown(self) -> None:
        self.screen_layout_refresh_signal.unsubscribe(self)
        on_shown, self._on_shown = self._on_shown, None
        if on_shown is not None:
            on_shown()
