"""One task of a batch, run inside an already-started worker process (local or Ray):
its own worktree, the agent `loom run` builds, headless, and what it changed.

:func:`run_task` never raises for the task's own failure: a task that could not run, or
ran into an error, is a result with status "failed" and the error. A SIGINT to the process
(the driver's stop, Ctrl+C at the terminal) stops the task: before the agent starts it does
not start; while it runs it is aborted the way `loom run` aborts it, so its session stays
resumable, and the result is "stopped".
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType

from loom_engine.redact import redact_secrets

from .gate import GatedUsageWaiter, UsageGate
from .job import BatchJob
from .results import DIFFS_FOLDER, TaskResult, TaskStatus
from .tasks import BatchTask, is_clone_url
from .worktrees import Worktree, WorktreeError, add_worktree, changes, keep_worktree, remove_worktree


def run_task(task: BatchTask, job: BatchJob, gate: UsageGate) -> TaskResult:
    started = time.monotonic()
    job.apply_environment()
    with _stop_on_sigint() as stopped:
        worktree: Worktree | None = None
        try:
            worktree = add_worktree(task.repo, task.base, task.id)
            if stopped.is_set():
                return TaskResult(task.id, "stopped", duration_s=time.monotonic() - started,
                                  error="stopped before it started")
            outcome = _run_agent(task, job, gate, worktree)
            diff_path: str | None
            try:
                diff_path, files = _save_diff(task, job, worktree)
            except (WorktreeError, OSError) as error:  # the run and its cost still count
                diff_path, files = None, ()
                outcome = replace(outcome, status="failed", error=f"its diff could not be read: {error}")
        except (WorktreeError, OSError) as error:
            return TaskResult(task.id, "failed", duration_s=time.monotonic() - started,
                              error=redact_secrets(str(error)))
        except Exception as error:  # a bug must fail this task, not the worker and every task after it
            return TaskResult(task.id, "failed", duration_s=time.monotonic() - started,
                              error=redact_secrets(f"internal error: {type(error).__name__}: {error}"))
        finally:
            if worktree is not None:
                (keep_worktree if job.keep_worktrees else remove_worktree)(worktree)
    return TaskResult(task.id, outcome.status, session_id=outcome.session_id, turns=outcome.turns,
                      input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
                      cost_usd=outcome.cost_usd, duration_s=time.monotonic() - started,
                      files_changed=files, diff_path=diff_path, error=outcome.error, model=outcome.model)


@dataclass(frozen=True)
class _Outcome:
    status: TaskStatus
    error: str | None
    session_id: str | None = None
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None


def _run_agent(task: BatchTask, job: BatchJob, gate: UsageGate, worktree: Worktree) -> _Outcome:
    """The agent `loom run` would build in the worktree, run headless on the task's prompt;
    what the user trusted in the repository (by content) holds in its worktree too."""
    from ..bootstrap import RunOptions, UsageError, build_agent
    from ..headless import EXIT_CUT_OFF, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE_LIMIT, run_headless
    from ..mcp_setup import headless_wait_s
    from ..settings import ConfigError

    defaults = job.defaults
    budget = task.max_budget_usd if task.max_budget_usd is not None else defaults.max_budget_usd
    cwd = worktree.cwd
    options = RunOptions(cwd=cwd, records_of=None if is_clone_url(task.repo) else worktree.repo, snapshots=False,
                         provider=defaults.provider, model=task.model or defaults.model,
                         max_turns=task.max_turns or defaults.max_turns, max_budget_usd=budget,
                         permission_mode=task.permission_mode or defaults.permission_mode,
                         sandbox=defaults.sandbox, allow=defaults.allow, deny=defaults.deny,
                         trust_project=defaults.trust_project or None, usage_limits=defaults.usage_limits,
                         usage_waiter=GatedUsageWaiter(gate, defaults.usage_limits))
    from loom_engine.providers.base import ProviderError

    try:
        built = build_agent(options, interactive=False)
    except (UsageError, ConfigError, ProviderError) as error:
        return _Outcome("failed", str(error))
    out, err = io.StringIO(), io.StringIO()
    handler = signal.getsignal(signal.SIGINT)  # the run's own replaces it, and leaves Python's default
    with _inside(cwd):  # what reads the current folder sees the task's, as under `loom run`
        try:
            code = asyncio.run(run_headless(built.agent, task.prompt, "json", out=out, err=err,
                                            mcp_wait_s=headless_wait_s(), usage_limits=defaults.usage_limits))
        finally:
            built.session.close()
            with contextlib.suppress(ValueError, TypeError):  # not the main thread; a handler not set from Python
                signal.signal(signal.SIGINT, handler)
    usage = built.agent.metrics.usage
    result = _result_line(out.getvalue())
    turns = result.get("num_turns")
    status: TaskStatus = ("done" if code in (EXIT_OK, EXIT_CUT_OFF) else
                          "stopped" if code in (EXIT_INTERRUPTED, EXIT_USAGE_LIMIT) else "failed")
    said = None if status == "done" else _error_text(result, err.getvalue())
    return _Outcome(status, said, built.agent.session_id, turns if isinstance(turns, int) else 0,
                    usage.input_tokens, usage.output_tokens, built.agent.metrics.cost_usd, built.agent.config.model)


def _result_line(printed: str) -> dict[str, object]:
    """The result object `-o json` printed (the last line), or nothing."""
    for line in reversed(printed.splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                return value
    return {}


def _error_text(result: dict[str, object], stderr: str) -> str:
    said = result.get("result")
    if isinstance(said, str) and said:
        return said
    lines = [line.removeprefix("loom: ") for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "the run ended without a result"


def _save_diff(task: BatchTask, job: BatchJob, worktree: Worktree) -> tuple[str, tuple[str, ...]]:
    """DIR/diffs/<id>.diff (relative to DIR), and the files it changes."""
    changed = changes(worktree)
    relative = f"{DIFFS_FOLDER}/{task.id}.diff"
    target = job.out_dir / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(changed.diff, encoding="utf-8")
    return relative, changed.files


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _stop_on_sigint() -> Iterator[threading.Event]:
    """An event set by a SIGINT while the task is being set up or wound down (while the agent
    runs, `loom run`'s own handler takes the signal and aborts it); the process's handler as
    it was afterwards. Off the main thread, signals cannot be caught: the event stays unset."""
    stopped = threading.Event()

    def note(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    try:
        before = signal.signal(signal.SIGINT, note)
    except ValueError:  # not the main thread
        yield stopped
        return
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGINT, before)


def warm_up(job: BatchJob) -> None:
    """Import now what every task needs (the engine, the tools, the provider's SDK), once
    per worker process, so that no task pays for it: a worker's first call."""
    job.apply_environment()
    import builtin_tools  # noqa: F401
    import loom_engine.agent  # noqa: F401
    from loom_engine.providers.sdk_preload import import_sdk, likely_provider

    from .. import bootstrap, headless  # noqa: F401

    import_sdk(job.defaults.provider or likely_provider([]))
