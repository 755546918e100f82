"""The box the chat's start-up question about the project and its lists share: `/mcp` and
`/hooks` list in the same frame what the question showed."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .hanging import Hanging

AnswerT = TypeVar("AnswerT")


def box_css(name: str, colour: str) -> str:
    """A centred, bordered box for the screen class ``name``, its list scrolling."""
    return f"""
    {name} {{
        align: center middle;
        background: $background 60%;
    }}
    {name} > Vertical {{
        width: 100%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round {colour};
        background: $surface;
        padding: 0 1;
        margin: 0 1;
    }}
    {name} .title {{
        text-style: bold;
    }}
    {name} VerticalScroll {{
        height: auto;
        max-height: 30;
        margin: 1 0;
    }}
    """


@dataclass(frozen=True)
class Question:
    """What a question box says, top to bottom."""

    title: Text
    lead: Text  # what would happen
    listed: Text  # the entries asked about
    note: Text  # why to be careful
    keys: Text


class QuestionBox(ModalScreen[AnswerT]):
    """A question answered by one key; keys typed in the first ``guard_s`` seconds are
    ignored (letters typed for the prompt just as the box opens must not answer it)."""

    def __init__(self, answers: Mapping[str, AnswerT], *, guard_s: float = 1.0) -> None:
        super().__init__()
        self._answers = dict(answers)
        self._opened = time.monotonic()
        self._guard_s = guard_s

    def question(self) -> Question:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        question = self.question()
        with Vertical():
            yield Static(question.title, classes="title")
            yield Static(question.lead)
            with VerticalScroll():
                yield Static(Hanging(question.listed))
            yield Static(question.note, classes="note")
            yield Static(question.keys)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        if time.monotonic() - self._opened < self._guard_s:
            return
        if event.key in self._answers:
            self.dismiss(self._answers[event.key])
