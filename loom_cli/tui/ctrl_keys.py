"""Ctrl+C, Ctrl+D and Esc Esc, which do what the moment calls for.

Ctrl+C copies a selection, closes the history search, interrupts a run, clears the
prompt (kept in the history: Up brings it back), and only when there is nothing else
to do quits, on a second press. Ctrl+D quits, but asks first while a run is going: one
key press too many must not throw work away. Esc interrupts a run; while idle with an
empty prompt, a second Esc soon after the first opens the rewind list.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from .history_search import HistorySearch
from .prompt_input import PromptHistory, PromptInput
from .status_bar import ActivityLine

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

    from ..chat_agent import ChatAgent

# How long a first Ctrl+C waits for the second one that quits.
QUIT_AGAIN_S = 2.0
# How long a first Ctrl+D during a run waits for the second one that quits.
QUIT_CONFIRM_S = 3.0
# How soon a second Esc must follow the first to open the rewind list.
REWIND_ESC_S = 0.8


class KeysHost(Protocol):
    """What the two keys read and act on in the app."""

    agent: ChatAgent | None
    running: bool
    prompt: PromptInput
    history: PromptHistory
    history_search: HistorySearch
    activity: ActivityLine

    @property
    def screen(self) -> Screen[Any]: ...
    @property
    def focused(self) -> Widget | None: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def interrupt(self, reason: str | None = None) -> bool: ...

    def exit(self, result: int | None = None) -> None: ...


class CtrlKeys:
    def __init__(self, host: KeysHost) -> None:
        self.host = host
        self._ctrl_c_at = 0.0
        self._quit_asked_at = 0.0
        self._esc_at = 0.0

    def ctrl_c(self) -> None:
        host = self.host
        selected = host.screen.get_selected_text()
        if selected:
            host.copy_to_clipboard(selected)
            host.screen.clear_selection()
            host.activity.show_hint("copied")
            return
        if host.prompt.selected_text:
            host.copy_to_clipboard(host.prompt.selected_text)
            host.activity.show_hint("copied")
            return
        if host.history_search.is_open:
            host.history_search.close(None)
            return
        if host.interrupt():
            return
        if host.prompt.text:
            # Kept in the history: Up brings a prompt cleared by mistake back.
            host.history.add(host.prompt.draft.expanded)
            host.prompt.set_text("")
            host.activity.show_hint("prompt cleared · ↑ brings it back", 2.0)
            return
        now = time.monotonic()
        if now - self._ctrl_c_at < QUIT_AGAIN_S:
            self.ctrl_d()
            return
        self._ctrl_c_at = now
        host.activity.show_hint("press Ctrl+C again to quit", QUIT_AGAIN_S)

    def esc_twice(self, at: float) -> bool:
        """An Esc pressed at ``at`` (the terminal's time of it) on the prompt: True when it is
        the second of two, close together, with no run going and nothing typed (Esc Esc
        opens the rewind list). Asked as the key arrives, before the prompt or a binding
        acts on it, so the keys typed right after it cannot overtake it; an Esc that
        something else takes (the history search, a modal) is not counted."""
        host = self.host
        if host.screen.is_modal or host.focused not in (host.prompt, None):
            return False
        if host.running or host.prompt.text or host.prompt.menu.is_open:
            self._esc_at = 0.0
            return False
        if at - self._esc_at < REWIND_ESC_S:
            self._esc_at = 0.0
            return True
        self._esc_at = at
        if host.agent is not None and host.agent.messages:
            host.activity.show_hint("Esc again to rewind", REWIND_ESC_S)
        return False

    def ctrl_d(self) -> None:
        host = self.host
        if host.running and host.agent is not None:
            now = time.monotonic()
            if now - self._quit_asked_at > QUIT_CONFIRM_S:
                self._quit_asked_at = now
                question = "a run is going — Ctrl+D again to stop it and quit"
                host.activity.show_hint(question, QUIT_CONFIRM_S)
                return
            host.agent.abort()
        host.exit(0)
