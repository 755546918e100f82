"""The local executor: N worker processes on this machine, each importing Loom once and
running task after task.

Why its own small pool rather than ``concurrent.futures.ProcessPoolExecutor``: that pool
queues tasks ahead of the workers (so a stop cannot keep a queued task from starting), does
not say when a task starts, and hides which process runs which task (needed to interrupt the
running ones on a stop). Here the driver hands a task to a worker only when that worker is
free, so it always knows who runs what.

Workers are started with ``spawn``: a fresh interpreter, not a fork of the driver (whose
threads - the progress display - a fork would copy mid-flight). Each pays Loom's import
once (:func:`~loom_cli.batch.worker.warm_up`), before its first task.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.context import SpawnContext, SpawnProcess
from multiprocessing.queues import Queue, SimpleQueue
from multiprocessing.sharedctypes import Synchronized

from .executor import BatchEvent, TaskFinished, TaskStarted, UsageLimitHeld
from .gate import SharedMemoryGate
from .job import BatchJob
from .results import TaskResult
from .tasks import BatchTask

# While stopping, a worker still running its task gets SIGINT again this often: the first
# may have come while its task was between the points that heed it.
_STOP_REPEAT_S = 0.5
# How long, after the last task, a worker has to leave before it is terminated.
_LEAVE_S = 10.0

_Message = tuple[int, TaskStarted | TaskFinished]


def _worker_main(index: int, job: BatchJob, gate_value: Synchronized[float], inbox: SimpleQueue[BatchTask | None],
                 outbox: Queue[_Message], driver: int) -> None:
    # A Ctrl+C at the terminal reaches every process of the group: an idle worker ignores
    # it, a running task heeds it (worker.run_task), and the driver decides what follows.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A driver killed outright (SIGKILL, a crash) cannot end its workers: they end with it,
    # at once, rather than wait for tasks forever (SIGKILL: a running task's own SIGTERM
    # handling would finish the task and then wait). Its session stays valid, as after
    # any crash; its worktree is left.
    from ..parent_death import end_with_parent

    end_with_parent(signal.SIGKILL, driver)
    from .worker import run_task, warm_up

    warm_up(job)
    gate = SharedMemoryGate(gate_value)
    while (task := inbox.get()) is not None:
        outbox.put((index, TaskStarted(task.id)))
        outbox.put((index, TaskFinished(run_task(task, job, gate))))


@dataclass
class _Worker:
    index: int
    process: SpawnProcess
    inbox: SimpleQueue[BatchTask | None]
    task: BatchTask | None = None
    interrupted_at: float = field(default=0.0)


class LocalExecutor:
    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("--workers must be 1 or more")
        self.workers = workers

    def run(self, tasks: Sequence[BatchTask], job: BatchJob, events: Callable[[BatchEvent], None],
            stop: threading.Event) -> None:
        if not tasks:
            return
        context = multiprocessing.get_context("spawn")
        gate_value = context.Value("d", 0.0)
        outbox: Queue[_Message] = context.Queue()
        pool = _Pool(context, job, gate_value, outbox)
        pending = deque(tasks)
        held_said = 0.0  # the latest hold of the usage gate the driver was told of
        try:
            workers = [pool.start() for _ in range(min(self.workers, len(tasks)))]
            while True:
                if not stop.is_set():
                    for worker in workers:
                        if worker.task is None and pending:
                            worker.task = pending.popleft()
                            worker.inbox.put(worker.task)
                busy = [worker for worker in workers if worker.task is not None]
                if not busy:
                    return
                if stop.is_set():
                    _interrupt(busy)
                if (held := float(gate_value.value)) > max(held_said, time.time()):
                    held_said = held
                    events(UsageLimitHeld(held))
                try:
                    index, event = outbox.get(timeout=0.2)
                except queue.Empty:
                    workers = [pool.replace(worker, events, stop.is_set()) if _died(worker) else worker
                               for worker in workers]
                    continue
                worker = next(w for w in workers if w.index == index)
                if isinstance(event, TaskFinished):
                    worker.task = None
                    worker.interrupted_at = 0.0
                events(event)
        except KeyboardInterrupt:  # the driver's second Ctrl+C: end now, not after the running tasks
            pool.close(at_once=True)
            raise
        finally:
            pool.close()


def _died(worker: _Worker) -> bool:
    return worker.task is not None and not worker.process.is_alive()


def _interrupt(busy: Sequence[_Worker]) -> None:
    now = time.monotonic()
    for worker in busy:
        if now - worker.interrupted_at >= _STOP_REPEAT_S and worker.process.pid is not None:
            worker.interrupted_at = now
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.process.pid, signal.SIGINT)


class _Pool:
    """Starts, replaces and ends the worker processes."""

    def __init__(self, context: SpawnContext, job: BatchJob, gate_value: Synchronized[float],
                 outbox: Queue[_Message]) -> None:
        self._context, self._job, self._gate_value, self._outbox = context, job, gate_value, outbox
        self._started: list[_Worker] = []
        self._closed = False

    def start(self) -> _Worker:
        inbox: SimpleQueue[BatchTask | None] = self._context.SimpleQueue()
        index = len(self._started)
        process = self._context.Process(target=_worker_main, name=f"loom-batch-{index}", daemon=True,
                                        args=(index, self._job, self._gate_value, inbox, self._outbox,
                                              os.getpid()))
        process.start()
        worker = _Worker(index, process, inbox)
        self._started.append(worker)
        return worker

    def replace(self, dead: _Worker, events: Callable[[BatchEvent], None], stopping: bool) -> _Worker:
        """A worker that died mid-task (killed, out of memory): its task failed - or, while
        the batch stops (a Ctrl+C can kill a worker still starting), it is only stopped - and a
        new worker takes its place unless the batch is stopping."""
        assert dead.task is not None
        said = f"the worker process died (exit code {dead.process.exitcode})"
        events(TaskFinished(TaskResult(dead.task.id, "stopped" if stopping else "failed", error=said)))
        dead.task = None
        return dead if stopping else self.start()

    def close(self, *, at_once: bool = False) -> None:
        """Each worker leaves after its task (or is ended now, ``at_once``); once only."""
        if self._closed:
            return
        self._closed = True
        for worker in self._started:
            if worker.process.is_alive():
                with contextlib.suppress(OSError, ValueError):
                    worker.inbox.put(None)
        deadline = time.monotonic() + (0.0 if at_once else _LEAVE_S)
        for worker in self._started:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(2.0)
        self._outbox.close()
