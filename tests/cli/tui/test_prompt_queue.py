"""The prompt queue and the run driver on their own, without an app."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from loom_cli.tui.paste import Draft, Paste
from loom_cli.tui.prompt_queue import PromptQueue
from loom_cli.tui.run_driver import RunDriver
from loom_cli.tui.run_view import EngineEvent, RunEnded


class View:
    def __init__(self) -> None:
        self.shown: list[list[str]] = []

    def show_queue(self, drafts: Sequence[Draft]) -> None:
        self.shown.append([d.text for d in drafts])


class Editor:
    def __init__(self, text: str = "") -> None:
        self.draft = Draft(text)

    def set_draft(self, draft: Draft) -> None:
        self.draft = draft


def make_queue(editor_text: str = "") -> tuple[PromptQueue, View, Editor]:
    view, editor = View(), Editor(editor_text)
    return PromptQueue(lambda: view, lambda: editor), view, editor


def test_prompts_go_in_order_and_the_view_follows() -> None:
    queue, view, _ = make_queue()
    queue.add(Draft("one"))
    queue.add(Draft("two"))
    assert view.shown[-1] == ["one", "two"]
    assert queue.next() == Draft("one")
    assert view.shown[-1] == ["two"]
    assert queue.take_last() == Draft("two")
    assert view.shown[-1] == []
    assert queue.next() is None and queue.take_last() is None


def test_after_an_interrupt_what_waits_goes_before_what_the_input_holds() -> None:
    queue, view, editor = make_queue("typing")
    queue.add(Draft("a"))
    queue.add(Draft("b"))
    queue.give_back()
    assert editor.draft.text == "a\n\nb\n\ntyping"
    assert not queue.drafts and view.shown[-1] == []


def test_nothing_waiting_leaves_the_input_alone() -> None:
    queue, _, editor = make_queue("typing")
    queue.give_back()
    assert editor.draft == Draft("typing")


def test_an_unsent_prompt_comes_back_first_with_its_pastes() -> None:
    paste = Paste("[pasted text: 3 lines]", "x\ny\nz")
    sent = Draft("see [pasted text: 3 lines]", (paste,))
    queue, _, editor = make_queue()
    queue.add(sent)
    assert queue.next() == sent
    queue.add(Draft("later"))
    queue.give_back(queue.unsent(sent.expanded))
    assert editor.draft.pastes == (paste,)
    assert editor.draft.text == "see [pasted text: 3 lines]\n\nlater"
    assert queue.unsent("something else") == Draft("something else")


async def test_what_an_interrupted_run_still_sends_is_stale() -> None:
    posted: list[Any] = []
    workers: list[asyncio.Task[None]] = []

    async def events() -> AsyncIterator[Any]:
        yield "event"

    def start(work: Any) -> Any:
        workers.append(asyncio.ensure_future(work))
        return None

    runs = RunDriver(start, lambda message: posted.append(message) is None)
    runs.start(events)
    first = runs.seq
    runs.aborted()
    await workers[-1]
    assert [type(m) for m in posted] == [EngineEvent, RunEnded]
    assert runs.is_stale(first)
    assert runs.ended(first) and not runs.active
    runs.start(events, compact=True)
    assert runs.is_stale(first) and not runs.is_stale(runs.seq)
    assert not runs.ended(first) and runs.active  # an older run's end changes nothing
    assert runs.was_compaction(runs.seq)
