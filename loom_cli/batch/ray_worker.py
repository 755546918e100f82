"""A worker of a batch on a Ray node: an actor that imports Loom once and then runs task
after task with :func:`~loom_cli.batch.worker.run_task`, one at a time.

Why actors rather than a Ray task per batch task: an actor is a process of its own that
stays up for the whole batch, so Loom's import (the engine, the tools, the provider's SDK:
about a second) is paid once per worker rather than whenever Ray picks a cold process, and
``--workers N`` means N of them whatever the cluster's size. And a running task can be
stopped cleanly: Ray's own cancel only sets a flag on a running actor call, so each worker
keeps a thread waiting on the batch's :class:`StopSignal`, which interrupts the task the way
Ctrl+C interrupts `loom run` (the session stays resumable and the result is "stopped").

The diff a task leaves is written on the worker's node, in a scratch folder, and returned
with the result: the driver alone writes the batch folder, which need not be shared.
"""

from __future__ import annotations

import _thread
import asyncio
import dataclasses
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.actor import ActorProxy
from ray.exceptions import RayError

from .job import BatchJob
from .ray_gate import RayGate
from .results import TaskResult
from .tasks import BatchTask

# While stopping, a task still running is interrupted again this often: the first
# interruption may have come while it was between the points that heed one.
_STOP_REPEAT_S = 0.5


@dataclass(frozen=True)
class WorkerOutcome:
    result: TaskResult
    diff: bytes | None  # the file at result.diff_path, for the driver to write


class StopSignal:
    """The Ray actor the driver sets when the batch stops; every worker waits on it."""

    def __init__(self) -> None:
        self._stopped = asyncio.Event()

    @ray.method
    async def wait(self) -> None:
        await self._stopped.wait()

    @ray.method
    async def set(self) -> None:
        self._stopped.set()


class LoomWorker:
    """One worker of the batch (a Ray actor; its calls run on the process's main thread,
    where `loom run`'s signal handling works)."""

    def __init__(self, job: BatchJob, gate: RayGate, stop: ActorProxy[StopSignal]) -> None:
        # Idle, the worker ignores an interruption; a running task installs its own handler.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from .worker import warm_up

        warm_up(job)
        self._job = job
        self._gate = gate
        self._lock = threading.Lock()
        self._stopping = False
        self._idle = threading.Event()
        self._idle.set()
        threading.Thread(target=self._interrupt_on_stop, args=(stop,), name="loom-batch-stop", daemon=True).start()

    @ray.method
    def ready(self) -> None:
        """Answered once the worker has imported Loom: then it takes its first task."""

    @ray.method
    def run(self, task: BatchTask) -> WorkerOutcome:
        from .worker import run_task

        with self._lock:
            if self._stopping:
                return WorkerOutcome(TaskResult(task.id, "stopped", error="stopped before it started"), None)
            self._idle.clear()
        scratch = Path(tempfile.mkdtemp(prefix=f"loom-batch-{task.id}-out-"))
        try:
            result = run_task(task, dataclasses.replace(self._job, out_dir=scratch), self._gate)
            diff = (scratch / result.diff_path).read_bytes() if result.diff_path else None
            return WorkerOutcome(result, diff)
        finally:
            with self._lock:
                self._idle.set()
            shutil.rmtree(scratch, ignore_errors=True)

    def _interrupt_on_stop(self, stop: ActorProxy[StopSignal]) -> None:
        try:
            ray.get(stop.wait.remote())
        except RayError:  # the batch is over and its actors are going away
            return
        with self._lock:
            self._stopping = True
        while True:
            with self._lock:
                if self._idle.is_set():
                    return
                # What a SIGINT does, without sending one: the handler the task installed runs
                # on the main thread (a SIGINT sent to a Ray worker's process never reached it).
                _thread.interrupt_main(signal.SIGINT)
            if self._idle.wait(_STOP_REPEAT_S):
                return


RemoteStopSignal = ray.remote(num_cpus=0, max_restarts=0)(StopSignal)
# A CPU each, so that the cluster places the workers where there is room; one call at a
# time, on the main thread; not restarted when it dies (the driver records its task as
# failed and starts another).
RemoteLoomWorker = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(LoomWorker)
