"""`loom batch --executor ray`: the batch's tasks on a Ray cluster (docs/batch.md, "On a
Ray cluster"). Imported only for that flag: nothing else in Loom imports Ray.

``--address`` is what ``ray.init`` takes: none, a local Ray started for the batch and
stopped after it; ``auto``, the cluster this machine has joined (``ray start``);
``HOST:PORT``, a cluster's head; ``ray://HOST:10001``, a remote cluster through Ray Client.
A Ray this process is already connected to (a program that runs the batch, a test) is used
as it is and left connected.

Ray schedules; Loom only hands each of ``--workers`` worker actors (:mod:`.ray_worker`) its
next task when it is ready (Loom imported) and free, and takes the results back with
``ray.wait`` as each finishes - so a stop keeps every queued task from starting, a worker
still starting (or waiting for room on the cluster) holds no task back, and the driver alone
writes the batch folder (the diffs come back with the results).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType

import ray
from ray import ObjectRef
from ray.actor import ActorProxy
from ray.exceptions import RayActorError, RayError, RayTaskError

from .executor import BatchEvent, BatchUsageError, TaskFinished, TaskStarted, UsageLimitHeld
from .job import BatchJob
from .ray_gate import RayGate, kill
from .ray_worker import LoomWorker, RemoteLoomWorker, RemoteStopSignal, StopSignal, WorkerOutcome
from .results import TaskResult, TaskStatus
from .tasks import BatchTask

# Ray colours the tracebacks it carries.
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
# How often the driver looks at its stop event while it waits for results.
_POLL_S = 0.2
# A local Ray's shared-memory object store: the batch sends tasks and results of a few
# kilobytes, and Ray's default takes 30% of the machine's memory.
_LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024
# How long to try the head's port before telling the user nothing answers there (Ray's own
# attempt takes minutes, then exits the process).
_PROBE_S = 5.0


class ClusterError(BatchUsageError):
    """Ray could not be started or reached, or no worker could start on it: said in one
    line, exit 2, as a bad command line is (the results of tasks that finished stay)."""


class RayExecutor:
    """The :class:`~loom_cli.batch.executor.Executor` on a Ray cluster."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        if workers < 1:
            raise ValueError("--workers must be 1 or more")
        self.workers = workers
        self.address = address

    def run(self, tasks: Sequence[BatchTask], job: BatchJob, events: Callable[[BatchEvent], None],
            stop: threading.Event) -> None:
        if not tasks:
            return
        with connected(self.address, local_cpus=max(self.workers, os.cpu_count() or 1)):
            _RayBatch(min(self.workers, len(tasks)), job, events, stop).run(tasks)


@contextlib.contextmanager
def connected(address: str | None, *, local_cpus: int) -> Iterator[None]:
    """This process connected to the Ray at ``address`` (None: a local Ray of
    ``local_cpus`` CPUs, started now) for the block, and disconnected after it (the local
    Ray stopped)."""
    if ray.is_initialized():
        yield
        return
    if address is not None:
        _probe(address)
    terminate = signal.getsignal(signal.SIGTERM)
    try:
        # Ray Client warns on stderr before it raises the error said here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            _init(address, local_cpus)
    except (ConnectionError, ValueError, RuntimeError) as error:
        raise ClusterError(f"Ray{_at(address)}: {_first_line(error)}") from None
    except SystemExit:  # Ray's answer when the head stops answering mid-connection
        raise ClusterError(f"Ray{_at(address)}: the cluster did not answer") from None
    finally:
        _restore_sigterm(terminate)
    try:
        yield
    finally:
        ray.shutdown()


def _init(address: str | None, local_cpus: int) -> None:
    # Workers' output stays in Ray's logs (the batch's display owns the terminal), and so do
    # Ray's own notices below errors.
    if address is None:
        ray.init(num_cpus=local_cpus, include_dashboard=False, object_store_memory=_LOCAL_OBJECT_STORE_BYTES,
                 log_to_driver=False, logging_level=logging.ERROR)
    else:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)


def _restore_sigterm(handler: signal.Handlers | Callable[[int, FrameType | None], object] | int | None) -> None:
    """``ray.init`` replaces the process's SIGTERM handler with one that exits on the spot:
    the driver's own (a clean stop, as on Ctrl+C) comes back."""
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _probe(address: str) -> None:
    """A ClusterError now when nothing listens at ``HOST:PORT`` (or ``ray://HOST:PORT``)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a form Ray reads and judges itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_PROBE_S).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ClusterError(f"Ray at {address}: nothing answers there ({reason})") from None


def _at(address: str | None) -> str:
    return " (a local one)" if address is None else f" at {address}"


def _lines(error: BaseException) -> list[str]:
    return [line.strip() for line in _COLOUR.sub("", str(error)).splitlines() if line.strip()]


def _first_line(error: BaseException) -> str:
    """What Ray's message says first (its errors run to a page)."""
    return next(iter(_lines(error)), type(error).__name__)


def _last_line(error: BaseException) -> str:
    """The exception at the end of the traceback Ray's message carries."""
    lines = _lines(error)
    return lines[-1] if lines else type(error).__name__


@dataclass
class _Running:
    worker: ActorProxy[LoomWorker]
    task: BatchTask


class _RayBatch:
    """One run of the executor on a connected Ray: its actors, from start to kill."""

    def __init__(self, workers: int, job: BatchJob, events: Callable[[BatchEvent], None],
                 stop: threading.Event) -> None:
        self._size = workers
        self._job = job
        self._events = events
        self._stop = stop
        self._gate = RayGate.start()
        self._stop_signal: ActorProxy[StopSignal] = RemoteStopSignal.remote()
        self._started: list[ActorProxy[LoomWorker]] = []
        # Workers still importing Loom (or waiting for room on the cluster): a task goes to a
        # worker only once it is ready, so none waits behind a slow or unplaced one.
        self._warming: dict[ObjectRef[None], ActorProxy[LoomWorker]] = {}
        self._cannot_start: str | None = None

    def run(self, tasks: Sequence[BatchTask]) -> None:
        pending = deque(tasks)
        running: dict[ObjectRef[WorkerOutcome], _Running] = {}
        idle: list[ActorProxy[LoomWorker]] = []
        signalled = False
        held_said = 0.0  # the latest hold of the usage gate the driver was told of
        try:
            for _ in range(self._size):
                self._start_worker()
            while True:
                if not self._stop.is_set():
                    while idle and pending:
                        worker, task = idle.pop(), pending.popleft()
                        running[worker.run.remote(task)] = _Running(worker, task)
                        self._events(TaskStarted(task.id))
                elif not signalled:
                    self._stop_signal.set.remote()  # the running tasks stop; the pending never start
                    signalled = True
                if not running and (self._stop.is_set() or not pending):
                    return
                if (held := self._gate.held_until()) > max(held_said, time.time()):
                    held_said = held  # a worker met the usage limit: all wait until then
                    self._events(UsageLimitHeld(held))
                if not running and not self._warming and not idle:
                    # Every worker failed to start (Loom or the SDK missing on the nodes...):
                    # another would fail the same way.
                    raise ClusterError(self._cannot_start or "Ray: no worker could start")
                waitables: list[ObjectRef[WorkerOutcome] | ObjectRef[None]] = [*running, *self._warming]
                done, _ = ray.wait(waitables, num_returns=1, timeout=_POLL_S)
                for ref in done:
                    if ref in self._warming:
                        if self._warmed(ref):
                            idle.append(self._warming.pop(ref))
                        continue
                    finished = running.pop(ref)
                    result, alive = self._collect(ref, finished.task)
                    if alive:
                        idle.append(finished.worker)
                    elif not self._stop.is_set():
                        self._start_worker()
                    self._events(TaskFinished(result))
        finally:
            for actor in self._started:
                kill(actor)
            kill(self._stop_signal)
            self._gate.close()

    def _start_worker(self) -> None:
        worker: ActorProxy[LoomWorker] = RemoteLoomWorker.remote(self._job, self._gate, self._stop_signal)
        self._started.append(worker)
        self._warming[worker.ready.remote()] = worker

    def _warmed(self, ref: ObjectRef[None]) -> bool:
        """Whether the worker is ready; if it could not start, it is dropped and why is kept."""
        try:
            ray.get(ref)
            return True
        except RayError as error:
            self._warming.pop(ref)
            failed_init = isinstance(error, RayActorError) and error.actor_init_failed
            self._cannot_start = (f"the Ray workers could not start: {_last_line(error)}" if failed_init else
                                  f"the Ray workers died as they started: {_first_line(error)}")
            return False

    def _collect(self, ref: ObjectRef[WorkerOutcome], task: BatchTask) -> tuple[TaskResult, bool]:
        """The task's result (its diff written into the batch folder), and whether its
        worker lives on."""
        try:
            outcome = ray.get(ref)
        except RayActorError as error:
            # Killed, out of memory, its node gone - or stopped with the batch.
            status: TaskStatus = "stopped" if self._stop.is_set() else "failed"
            return TaskResult(task.id, status, error=f"the Ray worker died: {_first_line(error)}"), False
        except RayTaskError as error:  # run_task itself raised (it returns a task's own failures)
            return TaskResult(task.id, "failed", error=f"internal error: {_last_line(error)}"), True
        except RayError as error:
            return TaskResult(task.id, "failed", error=f"Ray: {_first_line(error)}"), False
        result = outcome.result
        if outcome.diff is not None and result.diff_path is not None:
            out_dir = self._job.out_dir.resolve()
            target = (out_dir / result.diff_path).resolve()
            if not target.is_relative_to(out_dir):
                outside = f"diff outside the batch folder: {result.diff_path}"
                return TaskResult(task.id, "failed", error=outside), True
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(outcome.diff)
        return result, True
