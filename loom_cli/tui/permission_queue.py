"""Permission requests wait here and are asked one at a time.

Calls that run in parallel (and sub-agents) can ask at the same moment; the modal shows
the oldest request, and the next one opens when it is answered. An answer of None
means the modal was closed without one (the run ended under it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from textual.app import App

from loom_engine.events import PermissionRequested
from loom_engine.permissions.answer import PermissionAnswer

from .permission_modal import PermissionModal

AnswerHandler = Callable[[PermissionRequested, PermissionAnswer | None], None]


class PermissionQueue:
    def __init__(self, app: App[Any], *, guard_s: float, on_answer: AnswerHandler,
                 on_open: Callable[[], None] = lambda: None, on_close: Callable[[], None] = lambda: None) -> None:
        self.app = app
        self.guard_s = guard_s
        self.on_answer = on_answer
        # Told when a question opens and when it closes (the run's clock stops between).
        self.on_open = on_open
        self.on_close = on_close
        self._waiting: deque[PermissionRequested] = deque()
        self._modal: PermissionModal | None = None

    @property
    def asking(self) -> bool:
        return self._modal is not None

    def ask(self, request: PermissionRequested) -> None:
        self._waiting.append(request)
        self._ask_next()

    def clear(self) -> None:
        """The run ended: close the open question and drop the waiting ones."""
        if self._modal is not None:
            modal, self._modal = self._modal, None
            self.on_close()
            if modal.is_attached and self.app.screen is modal:
                modal.dismiss(None)
        self._waiting.clear()

    def _ask_next(self) -> None:
        if self._modal is not None or not self._waiting:
            return
        request = self._waiting.popleft()
        modal = PermissionModal(request, guard_s=self.guard_s)
        self._modal = modal
        self.on_open()

        def answered(answer: PermissionAnswer | None) -> None:
            self._answered(modal, request, answer)

        self.app.push_screen(modal, callback=answered)

    def _answered(self, modal: PermissionModal, request: PermissionRequested, answer: PermissionAnswer | None) -> None:
        if self._modal is modal:
            self._modal = None
            self.on_close()
        self.on_answer(request, answer)
        self._ask_next()
