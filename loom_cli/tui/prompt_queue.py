"""Prompts sent while a run goes wait here, in order, and go to the agent one at a time.

The waiting prompts are shown dimmed above the input (`QueueView`), and Up on an empty
input takes the last one back to edit. When the user has to decide what happens next
(after Esc, or when a request failed before any answer came) nothing is sent on its
own: everything waiting goes back into the input, as one draft before what it holds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from .paste import Draft, merge_drafts


class QueueShown(Protocol):
    """Where the waiting prompts are listed (the `QueueView`)."""

    def show_queue(self, drafts: Sequence[Draft]) -> None: ...


class Editor(Protocol):
    """The input the prompts go back to (the `PromptInput`)."""

    @property
    def draft(self) -> Draft: ...

    def set_draft(self, draft: Draft) -> None: ...


class PromptQueue:
    def __init__(self, view: Callable[[], QueueShown], editor: Callable[[], Editor]) -> None:
        # Getters: the widgets are composed after the queue is made.
        self._view = view
        self._editor = editor
        self.drafts: deque[Draft] = deque()
        self._sent: Draft | None = None  # the prompt of the run going on (given back if it fails)

    def add(self, draft: Draft) -> None:
        self.drafts.append(draft)
        self._show()

    def take_last(self) -> Draft | None:
        """The last queued prompt, out of the queue (Up on an empty prompt edits it)."""
        if not self.drafts:
            return None
        draft = self.drafts.pop()
        self._show()
        return draft

    def next(self) -> Draft | None:
        """The oldest queued prompt, out of the queue: it is being sent now."""
        if not self.drafts:
            return None
        draft = self.drafts.popleft()
        self._sent = draft
        self._show()
        return draft

    def unsent(self, text: str) -> Draft:
        """The draft of a prompt the agent gives back unsent: the one sent, with its pastes
        collapsed as they were, if it is that one."""
        sent = self._sent
        return sent if sent is not None and sent.expanded == text else Draft(text)

    def give_back(self, first: Draft | None = None) -> None:
        """Everything waiting (after ``first``) goes back into the input, before what it
        holds; nothing changes if nothing waits."""
        if first is None and not self.drafts:
            return
        editor = self._editor()
        current = editor.draft
        drafts = [*([first] if first is not None else []), *self.drafts,
                  *([current] if current.text.strip() else [])]
        self.drafts.clear()
        self._show()
        editor.set_draft(merge_drafts(drafts))

    def _show(self) -> None:
        self._view().show_queue(self.drafts)
