"""Each run of the engine as a Textual worker on the UI's own loop, one at a time.

The worker posts every engine event back as an `EngineEvent` carrying the run's number,
then `RunEnded`. The number tells which events belong to the run on screen: after Esc
the prompt is usable at once while the interrupted run still closes its turn, and what
it sends meanwhile is shown as stale. The next run starts only once that engine task has
ended (`active`), so two runs never share the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from textual.message import Message
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from loom_engine.events import AgentEvent, Error

from .run_view import EngineEvent, RunEnded

StreamFactory = Callable[[], AsyncIterator[AgentEvent]]


class RunDriver:
    def __init__(self, start_worker: Callable[[Coroutine[Any, Any, None]], Worker[None]],
                 post: Callable[[Message], bool]) -> None:
        self._start_worker = start_worker  # the app's run_worker, in the "run" group
        self._post = post
        self.seq = 0  # the number of the latest run
        self.active = False  # its engine task has not finished yet
        self._aborted = -1
        self._compacting = -1
        self._worker: Worker[None] | None = None

    def start(self, make_stream: StreamFactory, *, compact: bool = False) -> None:
        self.seq += 1
        self.active = True
        if compact:
            self._compacting = self.seq
        self._worker = self._start_worker(self._drive(make_stream, self.seq))

    async def _drive(self, make_stream: StreamFactory, seq: int) -> None:
        try:
            async for event in make_stream():
                self._post(EngineEvent(event, seq))
        except Exception as error:  # shown as an error line, the app lives on
            self._post(EngineEvent(Error(message=str(error) or type(error).__name__, kind="internal"), seq))
        finally:
            self._post(RunEnded(seq))

    def aborted(self) -> None:
        """The latest run was interrupted: what it still sends is stale."""
        self._aborted = self.seq

    def is_stale(self, seq: int) -> bool:
        return seq != self.seq or seq == self._aborted

    def ended(self, seq: int) -> bool:
        """Whether this end is the latest run's (an older run's end changes nothing)."""
        if seq != self.seq:
            return False
        self.active = False
        return True

    def was_compaction(self, seq: int) -> bool:
        """A /compact that ran to its end (not interrupted)."""
        return seq == self._compacting and seq != self._aborted

    async def wait_closed(self, timeout_s: float) -> None:
        """An interrupted run still closes its turn; wait for it, within reason."""
        worker = self._worker
        if worker is not None and self.active:
            try:
                await asyncio.wait_for(worker.wait(), timeout_s)
            except (TimeoutError, WorkerCancelled, WorkerFailed):
                pass  # what waits goes on all the same
