"""How a batch's tasks get run: an :class:`Executor` (the local process pool,
:mod:`loom_cli.batch.local`; a Ray cluster, :mod:`loom_cli.batch.ray_executor`) runs each
task with :func:`loom_cli.batch.worker.run_task` and tells the driver what happens."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .job import BatchJob
from .results import TaskResult
from .tasks import BatchTask


class BatchUsageError(Exception):
    """A bad command line, tasks file or cluster address: said, exit 2, nothing runs."""


@dataclass(frozen=True)
class TaskStarted:
    id: str


@dataclass(frozen=True)
class TaskFinished:
    result: TaskResult


@dataclass(frozen=True)
class UsageLimitHeld:
    """A worker met the account's usage limit: every worker waits until ``until`` (unix
    seconds) before its next request. Said when an executor learns of a new hold; one that
    cannot see its gate may say nothing (the tasks still wait)."""

    until: float


BatchEvent = TaskStarted | TaskFinished | UsageLimitHeld


class Executor(Protocol):
    def run(self, tasks: Sequence[BatchTask], job: BatchJob, events: Callable[[BatchEvent], None],
            stop: threading.Event) -> None:
        """Run ``tasks`` (in their order, as workers come free) and return when each has
        finished or ``stop`` is set and the running ones have stopped.

        ``events`` is called on the driver's side, from the thread that called ``run``, with
        a :class:`TaskStarted` when a worker takes a task, a :class:`TaskFinished` when it
        ends, whatever the outcome, and a :class:`UsageLimitHeld` when the workers wait for
        a usage limit's reset: a task that could not run (its worker died) is a result
        with status "failed". Once ``stop`` is set, no task starts, and the running ones are
        interrupted (their sessions stay resumable) and report status "stopped". The driver
        sets ``stop`` from its own thread (Ctrl+C, the batch's budget spent)."""
        ...
