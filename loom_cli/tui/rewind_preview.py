"""The preview of a code rewind: each file and what will happen to it, its diff on demand.

Files changed outside Loom since the snapshot (conflicts) are left alone unless the user
ticks them; files that can never be touched (created outside Loom, too big to keep a
copy of) are listed with the reason. Nothing is changed until Enter or y.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from loom_engine.snapshots.model import FileChange, LeftOut, RestorePlan

from ..wording import plural
from .diff_view import DiffView

ACTIONS = {"modify": ("will be restored", "yellow"), "recreate": ("will be recreated", "green"),
           "delete": ("will be deleted (created since)", "red")}
# Enter confirms, but not in the first moments: a key held since the menu must not apply.
ENTER_GUARD_S = 0.4


@dataclass(frozen=True)
class PreviewAnswer:
    """Restore, with these conflicting files too (their paths)."""

    included: frozenset[str] = frozenset()


def left_out_of(plan: RestorePlan) -> tuple[LeftOut, ...]:
    """Files the snapshots do not hold (too big), not already listed as changes."""
    listed = {c.path for c in plan.changes}
    seen: dict[str, LeftOut] = {}
    for item in (*plan.target.left_out, *plan.current.left_out):
        if item.path not in listed:
            seen.setdefault(item.path, item)
    return tuple(sorted(seen.values(), key=lambda item: item.path))


def _size(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{max(1, size // 1024)} KB"


def row_text(change: FileChange, *, ticked: bool, expanded: bool) -> Text:
    arrow = "▾ " if expanded else "▸ "
    text = Text(arrow, style="dim")
    if change.blocked is not None:
        text.append(change.path, style="dim")
        text.append(f"  left alone: {change.blocked}", style="dim italic")
        return text
    if change.conflict:
        text.append("[x] " if ticked else "[ ] ", style="bold yellow")
    text.append(change.path, style="bold")
    words, colour = ACTIONS[change.action]
    if change.conflict and not ticked:
        text.append(f"  {words}", style="dim strike")
        text.append("\n    ⚠ changed outside Loom since: left alone (c includes it)", style="yellow")
    else:
        text.append(f"  {words}", style=colour)
        if change.conflict:
            text.append("\n    ⚠ changed outside Loom since: included, that change will be lost", style="yellow")
    return text


class FileRow(Static):
    DEFAULT_CSS = """
    FileRow {
        height: auto;
    }
    FileRow.-cursor {
        background: $primary 30%;
    }
    """

    def __init__(self, change: FileChange) -> None:
        super().__init__()
        self.change = change
        self.ticked = False
        self.expanded = False

    def on_mount(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        self.update(row_text(self.change, ticked=self.ticked, expanded=self.expanded))


class RewindPreview(ModalScreen[PreviewAnswer | None]):
    """Up/Down move, Space/→ shows a file's diff, c includes conflicts, Enter/y restores, Esc cancels."""

    DEFAULT_CSS = """
    RewindPreview {
        align: center middle;
    }
    RewindPreview > Vertical {
        width: 96%;
        max-width: 130;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    RewindPreview #files {
        height: auto;
    }
    RewindPreview .title {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    RewindPreview DiffView {
        margin: 0 0 0 4;
    }
    RewindPreview .note {
        color: $text-muted;
        margin: 0 0 0 4;
    }
    """

    def __init__(self, plan: RestorePlan, title: str, *, subtitle: str = "", confirm: str = "restore",
                 guard_s: float = ENTER_GUARD_S) -> None:
        super().__init__()
        self.plan = plan
        self.title_text = title
        self.subtitle = subtitle
        self.confirm = confirm
        self.guard_s = guard_s
        self.cursor = 0
        self._opened = time.monotonic()

    @property
    def rows(self) -> list[FileRow]:
        return list(self.query(FileRow))

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"), classes="title")
            if self.subtitle:
                yield Static(Text(self.subtitle), classes="title")
            yield Static(id="summary")
            with VerticalScroll(id="files"):
                for change in self.plan.changes:
                    yield FileRow(change)
                left_out = left_out_of(self.plan)
                if left_out:
                    yield Static(Text("Not in the snapshots (too big to keep a copy), left alone:", style="dim"))
                    for item in left_out:
                        yield Static(Text(f"  {item.path}  {_size(item.size)}", style="dim"))
            yield Static(Text(f"↑↓ move · space diff · c include conflicts · enter/y {self.confirm} · esc cancel",
                              style="dim"), id="keys")

    def on_mount(self) -> None:
        self._move(0)
        self._summarise()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """The file list takes the room the titles and the keys leave, so they stay in view."""
        box = self.query_one(Vertical)
        others = sum(w.outer_size.height for w in box.children if w.id != "files")
        room = int(self.size.height * 0.9) - others - 2  # the box's border
        self.query_one("#files").styles.max_height = max(3, room)

    def _summarise(self) -> None:
        rows = self.rows
        going = [r for r in rows if r.change.blocked is None and (not r.change.conflict or r.ticked)]
        conflicts = [r for r in rows if r.change.conflict and r.change.blocked is None]
        left = sum(1 for r in conflicts if not r.ticked)
        parts = [f"{plural(len(going), 'file')} will change"]
        if conflicts:
            parts.append(f"{plural(left, 'conflict')} left alone" if left else "conflicts included")
        blocked = sum(1 for r in rows if r.change.blocked is not None)
        if blocked:
            parts.append(f"{blocked} never touched")
        self.query_one("#summary", Static).update(Text(" · ".join(parts), style="dim"))

    def _move(self, delta: int) -> None:
        rows = self.rows
        if not rows:
            return
        rows[self.cursor].remove_class("-cursor")
        self.cursor = max(0, min(len(rows) - 1, self.cursor + delta))
        row = rows[self.cursor]
        row.add_class("-cursor")
        row.scroll_visible(immediate=True)

    def _toggle_diff(self, expand: bool | None = None) -> None:
        rows = self.rows
        if not rows:
            return
        row = rows[self.cursor]
        want = not row.expanded if expand is None else expand
        if want == row.expanded:
            return
        row.expanded = want
        row.redraw()
        if want:
            change = row.change
            body: Static | DiffView
            if change.binary:
                body = Static("a binary file: no diff to show", classes="note")
            elif not change.diff.strip():
                body = Static("no difference in the text", classes="note")
            else:
                body = DiffView(change.diff)
            body.add_class("diff-of-row")
            self.query_one("#files").mount(body, after=row)
        else:
            index = list(self.query_one("#files").children).index(row)
            following = list(self.query_one("#files").children)[index + 1]
            if following.has_class("diff-of-row"):
                following.remove()

    def _tick(self) -> None:
        """c on a conflict includes it (or leaves it again); c elsewhere does it for all."""
        rows = self.rows
        conflicts = [r for r in rows if r.change.conflict and r.change.blocked is None]
        if not conflicts:
            self.app.bell()
            return
        row = rows[self.cursor]
        chosen = [row] if row in conflicts else conflicts
        tick = not all(r.ticked for r in chosen)
        for each in chosen:
            each.ticked = tick
            each.redraw()
        self._summarise()

    def answer(self) -> PreviewAnswer:
        return PreviewAnswer(frozenset(r.change.path for r in self.rows if r.ticked))

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        match event.key:
            case "escape" | "n":
                self.dismiss(None)
            case "y":
                self.dismiss(self.answer())
            case "enter":
                if time.monotonic() - self._opened >= self.guard_s:
                    self.dismiss(self.answer())
            case "up" | "k":
                self._move(-1)
            case "down" | "j":
                self._move(1)
            case "space":
                self._toggle_diff()
            case "right" | "l":
                self._toggle_diff(True)
            case "left" | "h":
                self._toggle_diff(False)
            case "c":
                self._tick()
            case "pageup":
                self.query_one("#files", VerticalScroll).scroll_page_up()
            case "pagedown":
                self.query_one("#files", VerticalScroll).scroll_page_down()
