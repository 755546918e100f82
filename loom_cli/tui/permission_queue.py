"""Permission requests wait here and are asked one at a time.

Calls that run in parallel (and sub-agents) can ask at the same moment; the docked
question shows the oldest request, and the next one opens when it is answered. A reply
of None means the question was closed without one (the run ended under it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from loom_engine.events import PermissionRequested

from .permission_prompt import PromptReply

AnswerHandler = Callable[[PermissionRequested, PromptReply | None], None]


class QuestionView(Protocol):
    """Where the question is shown (the docked `PermissionPrompt`)."""

    def open(self, request: PermissionRequested, *, guard_s: float,
             on_reply: Callable[[PromptReply], None]) -> None: ...

    def close(self) -> None: ...


class PermissionQueue:
    def __init__(self, view: Callable[[], QuestionView], *, guard_s: float, on_answer: AnswerHandler,
                 on_open: Callable[[], None] = lambda: None, on_close: Callable[[], None] = lambda: None) -> None:
        # A getter: the view is composed after the queue is made.
        self._view = view
        self.guard_s = guard_s
        self.on_answer = on_answer
        # Told when a question opens and when it closes (the run's clock stops between).
        self.on_open = on_open
        self.on_close = on_close
        self._waiting: deque[PermissionRequested] = deque()
        self._asking: PermissionRequested | None = None

    @property
    def asking(self) -> bool:
        return self._asking is not None

    @property
    def current(self) -> PermissionRequested | None:
        return self._asking

    def ask(self, request: PermissionRequested) -> None:
        self._waiting.append(request)
        self._ask_next()

    def clear(self) -> None:
        """The run ended: close the open question and drop the waiting ones."""
        self._waiting.clear()
        if self._asking is not None:
            self._answered(self._asking, None)

    def _ask_next(self) -> None:
        if self._asking is not None or not self._waiting:
            return
        request = self._waiting.popleft()
        self._asking = request
        self.on_open()

        def replied(reply: PromptReply) -> None:
            self._answered(request, reply)

        self._view().open(request, guard_s=self.guard_s, on_reply=replied)

    def _answered(self, request: PermissionRequested, reply: PromptReply | None) -> None:
        if self._asking is not request:
            return  # closed meanwhile (the run ended)
        self._asking = None
        self._view().close()
        self.on_close()
        self.on_answer(request, reply)
        self._ask_next()
