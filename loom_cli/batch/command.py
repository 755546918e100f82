"""`loom batch`'s driver: reads the tasks, skips the finished ones, runs the rest on an
executor, writes every result itself, shows progress, and stops cleanly.

Exit codes (docs/batch.md): 0 every task of the file is done; 1 a task failed; 2 a bad
command line or tasks file (nothing ran); 3 the batch's budget was spent before the end;
5 a usage limit stopped the batch (not waited for); 130 stopped by Ctrl+C or SIGTERM. The
first of 130, 3, 5 that applies wins over 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Literal, TextIO

from ..usage_limits import reset_phrase
from .executor import BatchEvent, BatchUsageError, Executor, TaskStarted, UsageLimitHeld
from .job import BatchDefaults, BatchJob, passed_environment
from .progress import Progress, Tally, make_progress
from .results import PREDS_FILE, RESULTS_FILE, ResultsError, ResultsWriter, TaskResult, to_run
from .tasks import BatchTask, TaskFileError, parse_tasks
from .worktrees import remove_abandoned_worktrees

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_USAGE_LIMIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 5, 130
# Why a batch stopped before its end: Ctrl+C or SIGTERM, its budget, a usage limit not waited for.
StopReason = Literal["signal", "budget", "usage_limit"]


@dataclass(frozen=True)
class BatchRequest:
    tasks_file: Path
    out_dir: Path
    workers: int = 2
    executor: str = "local"  # "local" | "ray"
    address: str | None = None  # Ray's cluster address (--address)
    keep_worktrees: bool = False
    retry_failed: bool = False
    max_budget_usd: float | None = None
    defaults: BatchDefaults = field(default_factory=BatchDefaults)


def current_folder(cwd: Path) -> str | None:
    """``cwd`` when it is in a git repository (a task that names none runs in its worktree's
    counterpart of it, as `loom run` runs in the current folder), else None."""
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return str(cwd) if done.returncode == 0 and done.stdout.strip() else None


def make_executor(request: BatchRequest) -> Executor:
    if request.executor == "local":
        from .local import LocalExecutor

        return LocalExecutor(request.workers)
    try:  # Ray is an extra: imported only for --executor ray
        from .ray_executor import RayExecutor

        executor: Executor = RayExecutor(address=request.address, workers=request.workers)
    except ModuleNotFoundError as error:
        if error.name == "ray" or (error.name or "").startswith("ray."):
            raise BatchUsageError("--executor ray needs Ray: pip install 'loom-agent[ray]'") from None
        raise BatchUsageError(f"--executor ray is not available: {error}") from None
    return executor


def run_batch(request: BatchRequest, err: TextIO, out: TextIO, executor: Executor | None = None) -> int:
    """Run the batch (on ``executor``, default the request's); the exit code. Raises
    BatchUsageError before anything runs."""
    try:
        tasks = parse_tasks(request.tasks_file, current_folder(Path.cwd()))
    except TaskFileError as error:
        raise BatchUsageError(str(error)) from None
    if request.workers < 1:
        raise BatchUsageError("--workers must be 1 or more")
    executor = executor or make_executor(request)
    out_dir = request.out_dir.resolve()
    try:
        writer = ResultsWriter(out_dir)
    except ResultsError as error:
        raise BatchUsageError(str(error)) from None
    try:
        return _run(request, tasks, writer, executor, err, out)
    finally:
        writer.close()


def _run(request: BatchRequest, tasks: list[BatchTask], writer: ResultsWriter, executor: Executor, err: TextIO,
         out: TextIO) -> int:
    out_dir = writer.out_dir
    wanted = set(to_run((task.id for task in tasks), writer.latest, retry_failed=request.retry_failed))
    todo = [task for task in tasks if task.id in wanted]
    spent_before = writer.spent_usd
    budget_left = None if request.max_budget_usd is None else max(0.0, request.max_budget_usd - spent_before)
    skipped = len(tasks) - len(todo)
    if skipped:
        err.write(f"loom batch: {skipped} of {len(tasks)} tasks finished in an earlier run: skipped"
                  f"{'' if request.retry_failed else ' (--retry-failed runs the failed ones again)'}\n")
    if budget_left == 0.0 and todo:
        err.write(f"loom batch: the budget of ${request.max_budget_usd:.2f} is spent (${spent_before:.2f} so far)\n")
        return EXIT_BUDGET
    if abandoned := remove_abandoned_worktrees():
        err.write(f"loom batch: removed {abandoned} worktree{'s' if abandoned > 1 else ''} left by a batch "
                  "that ended without cleaning up\n")
    job = BatchJob(out_dir=out_dir, defaults=_with_budget(request.defaults, budget_left),
                   keep_worktrees=request.keep_worktrees, environment=passed_environment(os.environ))
    tally = Tally(total=len(todo), earlier=len(tasks) - len(todo))
    progress = make_progress(tally, err)
    driver = _Driver(writer, progress, {task.id: task for task in todo}, budget_left)
    with _stop_on_signals(driver):
        try:
            with driver.watch():
                executor.run(todo, job, driver.event, driver.stop)
        finally:
            progress.close()
    final = {**writer.latest}
    counts = {status: sum(1 for task in tasks if (r := final.get(task.id)) and r.status == status)
              for status in ("done", "failed", "stopped")}
    not_run = len(tasks) - sum(counts.values())
    out.write(f"{counts['done']} done, {counts['failed']} failed" + (f", {counts['stopped']} stopped" if
              counts["stopped"] else "") + (f", {not_run} not run" if not_run else "") +
              f" (${tally.cost_usd:.2f} this run); results: {out_dir / RESULTS_FILE}, {out_dir / PREDS_FILE}\n")
    if driver.why == "signal":
        return EXIT_INTERRUPTED
    if driver.why == "budget":
        return EXIT_BUDGET
    if driver.why == "usage_limit":
        return EXIT_USAGE_LIMIT
    return EXIT_OK if counts["done"] == len(tasks) else EXIT_FAILED


def _with_budget(defaults: BatchDefaults, budget_left: float | None) -> BatchDefaults:
    return defaults if budget_left is None else replace(defaults, max_budget_usd=budget_left)


class _Driver:
    """Takes the executor's events (on the driver's thread): writes each result, shows it,
    and sets ``stop`` when the budget is spent or a usage limit stopped a task."""

    def __init__(self, writer: ResultsWriter, progress: Progress, tasks: dict[str, BatchTask],
                 budget_left: float | None) -> None:
        self.writer, self.progress, self.tasks, self.budget_left = writer, progress, tasks, budget_left
        self.stop = threading.Event()
        self.why: StopReason | None = None
        self.line: str | None = None  # what the user is told about it
        self.spent = 0.0

    def halt(self, why: StopReason, line: str) -> None:
        """Stop the batch, saying why. Called from a signal handler too, so it only records:
        drawing there could re-enter a write the main thread was in the middle of (a stale
        panel, or a "reentrant call" error); :meth:`watch`'s thread says the line."""
        if not self.stop.is_set():
            self.why, self.line = why, line
            self.stop.set()

    @contextlib.contextmanager
    def watch(self) -> Iterator[None]:
        """While the batch runs, a thread that says why it stops, when it does."""
        def say() -> None:
            self.stop.wait()
            if self.line is not None:
                self.progress.note(self.line)

        thread = threading.Thread(target=say, name="loom-batch-stop-note", daemon=True)
        thread.start()
        try:
            yield
        finally:
            self.stop.set()  # lets the thread end (nothing more starts: the executor has returned)
            thread.join()

    def event(self, event: BatchEvent) -> None:
        if isinstance(event, TaskStarted):
            task = self.tasks.get(event.id)
            self.progress.started(event.id, task.prompt if task is not None else "")
            return
        if isinstance(event, UsageLimitHeld):
            now = time.time()
            self.progress.note(f"usage limit: every worker waits; it {reset_phrase(event.until, now)}")
            return
        result: TaskResult = event.result
        self.writer.add(result)
        self.progress.finished(result)
        self.spent += result.cost_usd
        if self.budget_left is not None and self.spent >= self.budget_left:
            self.halt("budget", f"the batch's budget is spent (${self.spent:.2f} this run): stopping the "
                                "running tasks, starting no more")
        elif result.status == "stopped" and not self.stop.is_set():  # a usage limit not waited for
            self.halt("usage_limit", "a usage limit stopped a task: stopping the batch (a rerun after the "
                                     "reset goes on)")


@contextlib.contextmanager
def _stop_on_signals(driver: _Driver) -> Iterator[None]:
    """The first Ctrl+C (or SIGTERM) stops the batch cleanly; a second one ends it now."""
    def handle(signum: int, frame: FrameType | None) -> None:
        if driver.stop.is_set() and driver.why == "signal":
            raise KeyboardInterrupt
        driver.halt("signal", "stopping: the running tasks end their sessions (Ctrl+C again to end at once)")

    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM)
    try:
        before = [signal.signal(sig, handle) for sig in signals]
    except ValueError:  # not the main thread (tests): no handler
        yield
        return
    try:
        yield
    finally:
        for sig, handler in zip(signals, before, strict=True):
            signal.signal(sig, handler)


def main_entry(request: BatchRequest) -> int:
    """`loom batch` from the command line: the exit code (a bad request said in one line)."""
    from ..visible_text import raw_stream

    try:
        return run_batch(request, raw_stream(sys.stderr), sys.stdout)
    except BatchUsageError as error:
        sys.stderr.write(f"loom: {error}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:  # a second Ctrl+C: the workers were ended, what had finished is kept
        sys.stderr.write("loom: batch ended at once (a rerun goes on)\n")
        return EXIT_INTERRUPTED
