"""The prompt: a multi-line editor with history and completion.

Enter sends; Shift+Enter or Ctrl+J inserts a newline (many terminals send Shift+Enter
as a plain Enter, Ctrl+J always arrives). Up/Down walk the history when the cursor is
on the first/last line. Typing `/` at the start completes commands, `@` completes
workspace files; Tab accepts, Esc closes the menu.

Enter sends exactly what the input holds. Keys can arrive faster than the `Changed`
messages the menu is computed from (a paste, a laggy SSH link): a menu computed for
`/c` must not turn `/cost` into `/clear ost`. So Enter accepts a completion only when
the open menu was computed for the text as it is now.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.text import Text
from textual import events
from textual.message import Message as TextualMessage
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from loom_engine.private_files import open_private, private_folder, write_private

from .completion import Candidate, CompletionContext, completion_context, match_commands, match_mentions
from .paste import Draft, Paste, is_large, paste_label

HISTORY_LIMIT = 1000


def history_file(data_dir: Path, workspace: Path) -> Path:
    """One history file per workspace, named so it is recognisable and unique."""
    resolved = str(workspace.resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", workspace.resolve().name or "root")[:40]
    return data_dir / "history" / f"{slug}-{digest}.jsonl"


class PromptHistory:
    """Submitted prompts, newest last, persisted as JSON lines."""

    def __init__(self, path: Path | None, limit: int = HISTORY_LIMIT) -> None:
        self.path = path
        self.limit = limit
        self.entries: list[str] = []
        self._cursor: int | None = None  # index into entries while browsing
        self._draft = ""
        if path is not None:
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        try:
            raw = self.path.read_text(encoding="utf-8")
        except OSError:
            return
        for line in raw.splitlines():
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a crash; skip it
            if isinstance(value, str) and value:
                self.entries.append(value)
        self.entries = self.entries[-self.limit:]

    def add(self, text: str) -> None:
        self._cursor = None
        if not text.strip():
            return
        if self.entries and self.entries[-1] == text:
            return
        self.entries.append(text)
        if self.path is None:
            return
        try:
            private_folder(self.path.parent)  # prompts can hold anything the user pasted
            if len(self.entries) > self.limit * 2:
                self.entries = self.entries[-self.limit:]
                write_private(self.path, "".join(json.dumps(e) + "\n" for e in self.entries))
            else:
                with open_private(self.path) as handle:
                    handle.write(json.dumps(text) + "\n")
        except OSError:
            pass  # history is a convenience; a read-only home must not break the prompt

    @property
    def browsing(self) -> bool:
        return self._cursor is not None

    def previous(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self._cursor is None:
            self._draft = current
            self._cursor = len(self.entries) - 1
        elif self._cursor > 0:
            self._cursor -= 1
        else:
            return None
        return self.entries[self._cursor]

    def next(self) -> str | None:
        if self._cursor is None:
            return None
        if self._cursor < len(self.entries) - 1:
            self._cursor += 1
            return self.entries[self._cursor]
        self._cursor = None
        return self._draft

    def reset(self) -> None:
        self._cursor = None


class CompletionMenu(OptionList):
    DEFAULT_CSS = """
    CompletionMenu {
        height: auto;
        max-height: 10;
        display: none;
        border: none;
        padding: 0 1;
        background: $boost;
    }
    CompletionMenu.visible {
        display: block;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False
        self.candidates: list[Candidate] = []

    def show(self, candidates: Sequence[Candidate]) -> None:
        self.candidates = list(candidates)
        self.clear_options()
        options = []
        for candidate in candidates:
            label = Text(candidate.label, style="bold")
            if candidate.detail:
                label.append(f"  {candidate.detail}", style="dim")
            options.append(Option(label))
        self.add_options(options)
        self.highlighted = 0 if candidates else None
        self.set_class(bool(candidates), "visible")

    def hide(self) -> None:
        self.candidates = []
        self.remove_class("visible")

    @property
    def is_open(self) -> bool:
        return self.has_class("visible") and bool(self.candidates)

    @property
    def current(self) -> Candidate | None:
        if not self.is_open or self.highlighted is None:
            return None
        return self.candidates[self.highlighted]

    def move(self, delta: int) -> None:
        if not self.candidates:
            return
        index = 0 if self.highlighted is None else self.highlighted
        self.highlighted = (index + delta) % len(self.candidates)


class PromptInput(TextArea):
    """The message editor."""

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: round $primary 60%;
        padding: 0 1;
    }
    PromptInput:focus {
        border: round $primary;
    }
    """

    class Submitted(TextualMessage):
        """``draft`` as the input showed it; ``text`` is what the model gets (pastes expanded)."""

        def __init__(self, draft: Draft) -> None:
            super().__init__()
            self.draft = draft
            self.text = draft.expanded

    def __init__(self, *, history: PromptHistory, menu: CompletionMenu,
                 commands: Sequence[tuple[str, str]], files: Callable[[], Sequence[str] | None],
                 take_queued: Callable[[], Draft | None] | None = None,
                 more_commands: Callable[[], Sequence[tuple[str, str]]] = lambda: (),
                 resources: Callable[[], Sequence[tuple[str, str]]] = lambda: (),
                 id: str | None = None) -> None:
        super().__init__("", soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
                         highlight_cursor_line=False, id=id,
                         placeholder="Ask Loom… (Enter to send, Ctrl+J for a newline, / for commands, @ for files)")
        self.prompt_history = history
        self.menu = menu
        self.commands = list(commands)
        self._files = files
        self._completion_ctx: CompletionContext | None = None
        # The text and cursor the open menu was computed for.
        self._menu_for: tuple[str, tuple[int, int]] | None = None
        self._suppress_completion = False
        self._pastes: list[Paste] = []
        self._take_queued = take_queued
        # What the MCP servers add (read when the menu opens: servers connect later):
        # their prompts as commands, their resources as "server:uri" mentions.
        self._more_commands = more_commands
        self._resources = resources

    # --- completion -------------------------------------------------------------------

    def _refresh_completion(self) -> None:
        row, column = self.cursor_location
        line = self.document.get_line(row)
        context = completion_context(line, column, first_line=row == 0)
        self._completion_ctx = context
        self._menu_for = (self.text, self.cursor_location)
        if context is None:
            self.menu.hide()
            return
        if context.kind == "slash":
            candidates = match_commands([*self.commands, *self._more_commands()], context.query)
        else:
            files = self._files() or ()
            candidates = match_mentions(files, self._resources(), context.query)
        if candidates:
            self.menu.show(candidates)
        else:
            self.menu.hide()

    def refresh_completion(self) -> None:
        """Recompute the menu (e.g. once the file list has loaded)."""
        if self.has_focus or self.menu.is_open:
            self._refresh_completion()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self._suppress_completion:
            self._suppress_completion = False
            self.menu.hide()
            return
        self._refresh_completion()

    @property
    def menu_is_current(self) -> bool:
        """The open menu was computed for the text the input holds now."""
        return self.menu.is_open and self._menu_for == (self.text, self.cursor_location)

    def accept_completion(self) -> bool:
        if not self.menu_is_current:
            return False
        candidate = self.menu.current
        context = self._completion_ctx
        if candidate is None or context is None:
            return False
        row, _ = self.cursor_location
        self._suppress_completion = True
        self.replace(candidate.value, (row, context.start), (row, context.end))
        self.menu.hide()
        self._completion_ctx = None
        return True

    # --- keys -------------------------------------------------------------------------

    def set_text(self, text: str) -> None:
        """Replace the whole text (history, a queued prompt given back) with the cursor at its end."""
        self.set_draft(Draft(text))

    def set_draft(self, draft: Draft) -> None:
        """Replace the whole text and the pastes behind its labels; the cursor goes to the end."""
        self._suppress_completion = True
        self._pastes = list(draft.pastes)
        self.load_text(draft.text)
        self.menu.hide()
        self._menu_for = None
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document.get_line(last))))

    @property
    def draft(self) -> Draft:
        text = self.text
        return Draft(text, tuple(p for p in self._pastes if p.label in text))

    def submit(self) -> None:
        draft = self.draft
        if not draft.text.strip():
            return
        self.prompt_history.add(draft.expanded)
        self.set_text("")
        self.post_message(self.Submitted(draft))

    # --- pastes -----------------------------------------------------------------------

    async def _on_paste(self, event: events.Paste) -> None:
        text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        if self.read_only or not is_large(text):
            return  # Textual goes on to TextArea's own handler, which inserts it
        event.stop()
        event.prevent_default()
        label = paste_label(text, [p.label for p in self._pastes if p.label in self.text])
        self._pastes.append(Paste(label, text))
        self._suppress_completion = True
        result = self.replace(label, *self.selection)
        self.move_cursor(result.end_location)
        self.focus()

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        handled = True
        if key == "enter":
            slash = self._completion_ctx is not None and self._completion_ctx.kind == "slash"
            # Enter on a file completion picks it; on a command it picks and runs it. Either
            # only when the menu is for the current text: otherwise the text goes as it is.
            if not self.accept_completion() or slash:
                self.submit()
        elif key in ("ctrl+j", "shift+enter"):
            self.insert("\n")
        elif key == "tab":
            if not self.menu_is_current:
                self._refresh_completion()  # the menu lags a burst of keys: recompute first
            if not self.accept_completion():
                self._refresh_completion()
                if self.menu.is_open and len(self.menu.candidates) == 1:
                    self.accept_completion()
        elif key == "escape" and self.menu.is_open:
            self.menu.hide()
        elif key == "up" and self.menu.is_open:
            self.menu.move(-1)
        elif key == "down" and self.menu.is_open:
            self.menu.move(1)
        elif key == "up" and not self.text and self._take_queued is not None and self._edit_queued():
            pass
        elif key == "up" and self.cursor_location[0] == 0:
            previous = self.prompt_history.previous(self.text)
            if previous is not None:
                self.set_text(previous)
        elif key == "down" and self.cursor_location[0] == self.document.line_count - 1 and self.prompt_history.browsing:
            following = self.prompt_history.next()
            if following is not None:
                self.set_text(following)
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def _edit_queued(self) -> bool:
        """Up on an empty prompt: the last queued message comes back here to be edited."""
        assert self._take_queued is not None
        queued = self._take_queued()
        if queued is None:
            return False
        self.set_draft(queued)
        return True
