"""/resume: pick one of the workspace's earlier sessions; typing filters the list by the
search index (`loom sessions search`'s search, each word matched as typed), best match
first, each with the snippet that matched."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..wording import conversation_length
from .picker import PickerScreen

if TYPE_CHECKING:
    from loom_engine.index.query import SearchHit
    from loom_engine.sessions.store import SessionInfo

# What typing searches with: the text typed -> the matching sessions, best first.
SessionSearch = Callable[[str], Sequence["SearchHit"]]


def session_label(info: SessionInfo) -> str:
    """One line per session: when, how long, the first prompt, the id."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
    prompt = info.first_prompt.strip().splitlines()
    first = prompt[0] if prompt else "(no prompt)"
    if len(first) > 60:
        first = first[:59] + "…"
    return f"{when}  {conversation_length(info.prompts):>11}  {first}  [{info.id}]"


# Context kept before the first match, so that a narrow picker, which cuts the line's
# end, still shows what matched.
_LEAD = 24


def snippet_text(hit: SearchHit) -> Text:
    """The hit's snippet on one line (cut with … where the picker is narrow), matches bold."""
    text = Text("  ", no_wrap=True, overflow="ellipsis", style="dim")
    parts = list(hit.snippet)
    first = next((i for i, part in enumerate(parts) if part.matched), 0)
    before = "".join(part.text for part in parts[:first])
    if len(before) > _LEAD:
        kept = before[-_LEAD:]
        kept = kept[kept.find(" ") + 1:] if " " in kept else kept  # from a word's start
        text.append("…" + kept)
        parts = parts[first:]
    for part in parts:
        text.append(part.text, style="bold reverse" if part.matched else "")
    return text


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
    SessionPicker #session-search, SessionPicker #session-search:focus {
        border: none;
        height: 1;
        padding: 0 1;
        background: $boost;
    }
    SessionPicker OptionList {
        height: auto;
        max-height: 20;
    }
    SessionPicker #no-match {
        color: $text-muted;
    }
    """

    def __init__(self, sessions: Sequence[SessionInfo], search: SessionSearch | None = None) -> None:
        super().__init__()
        self.sessions = list(sessions)
        self._search = search
        self.shown: list[str] = [s.id for s in self.sessions]  # the ids listed now, in order

    def compose(self) -> ComposeResult:
        with Vertical():
            hint = "type to search, " if self._search is not None else ""
            yield Static(Text(f"Resume a session ({hint}Enter to open, Esc to cancel)", style="bold"))
            if self._search is not None:
                yield Input(placeholder="search prompts, answers, commands, paths…", id="session-search")
            yield Static("", id="no-match")
            yield OptionList(*[Option(Text(session_label(s)), id=s.id) for s in self.sessions], id="sessions")

    def on_mount(self) -> None:
        self.query_one("#no-match").display = False
        if self.sessions:
            self.query_one(OptionList).highlighted = 0
        if self._search is not None:
            self.query_one(Input).focus()
        else:
            self.query_one(OptionList).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one(OptionList)
        if options.highlighted is not None and self.shown:
            self.dismiss(self.shown[options.highlighted])

    def on_key(self, event: events.Key) -> None:
        if event.key in ("up", "down", "pageup", "pagedown") and isinstance(self.focused, Input):
            event.stop()
            options = self.query_one(OptionList)
            {"up": options.action_cursor_up, "down": options.action_cursor_down,
             "pageup": options.action_page_up, "pagedown": options.action_page_down}[event.key]()
        # Esc: PickerScreen's own handler (Textual calls each class's) cancels.

    def filter(self, typed: str) -> None:
        """List the sessions matching ``typed``, best first (all of them when it is blank)."""
        options = self.query_one(OptionList)
        by_id = {s.id: s for s in self.sessions}
        message = ""
        if not typed.strip() or self._search is None:
            entries: list[Option] = [Option(Text(session_label(s)), id=s.id) for s in self.sessions]
        else:
            try:
                hits = [h for h in self._search(typed) if h.session_id in by_id]
            except Exception as error:  # a broken index must not break the picker: say so, list nothing
                hits = []
                message = f"search failed: {error}"
            entries = [Option(Group(Text(session_label(by_id[h.session_id])), snippet_text(h)), id=h.session_id)
                       for h in hits]
            if not entries and not message:
                message = f"no session of this workspace matches {' '.join(typed.split())!r}"
        self.shown = [str(option.id) for option in entries]
        options.clear_options()
        options.add_options(entries)
        if entries:
            options.highlighted = 0
        notice = self.query_one("#no-match", Static)
        notice.update(Text(message))
        notice.display = bool(message)
