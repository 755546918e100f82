"""The driver with an executor of the test's: what it writes, what it shows, when it stops
the batch (budget, a usage limit not waited for) and its exit codes."""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from loom_cli.batch.command import BatchRequest, make_executor, run_batch
from loom_cli.batch.executor import BatchEvent, BatchUsageError, TaskFinished, TaskStarted
from loom_cli.batch.job import BatchJob
from loom_cli.batch.results import TaskResult, TaskStatus
from loom_cli.batch.tasks import BatchTask
from tests.doubles.batch_tasks import abandoned_worktree, git, task_line, user_repository, write_tasks


class ScriptedExecutor:
    """Runs each task by saying its scripted result, one after another, until stopped."""

    def __init__(self, outcomes: dict[str, tuple[TaskStatus, float]]) -> None:
        self.outcomes = outcomes
        self.ran: list[str] = []
        self.given: list[BatchTask] = []
        self.job: BatchJob | None = None

    def run(self, tasks: Sequence[BatchTask], job: BatchJob, events: Callable[[BatchEvent], None],
            stop: threading.Event) -> None:
        self.job = job
        self.given = list(tasks)
        for task in tasks:
            if stop.is_set():
                return
            self.ran.append(task.id)
            events(TaskStarted(task.id))
            status, cost = self.outcomes.get(task.id, ("done", 0.0))
            events(TaskFinished(TaskResult(task.id, status, cost_usd=cost, error=None if status == "done" else "x")))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = user_repository(tmp_path / "repo")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))  # where a batch looks for abandoned worktrees
    return repo


def batch(tmp_path: Path, executor: ScriptedExecutor, count: int = 4, **more: object) -> tuple[int, str, str]:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{n}") for n in range(1, count + 1)])
    err, out = io.StringIO(), io.StringIO()
    request = BatchRequest(tasks_file=tasks, out_dir=tmp_path / "out", **more)  # type: ignore[arg-type]
    return run_batch(request, err, out, executor), err.getvalue(), out.getvalue()


def test_the_budget_stops_the_batch_and_a_rerun_knows_it_is_spent(tmp_path: Path, repo: Path) -> None:
    executor = ScriptedExecutor({"t1": ("done", 0.6), "t2": ("done", 0.6)})
    code, err, out = batch(tmp_path, executor, max_budget_usd=1.0)
    assert code == 3 and executor.ran == ["t1", "t2"]
    assert executor.job is not None and executor.job.defaults.max_budget_usd == 1.0  # no task alone spends more
    assert "the batch's budget is spent ($1.20 this run): stopping the running tasks, starting no more" in err
    assert out.startswith("2 done, 0 failed, 2 not run ($1.20 this run)")
    code, err, _ = batch(tmp_path, ScriptedExecutor({}), max_budget_usd=1.0)
    assert code == 3 and "the budget of $1.00 is spent ($1.20 so far)" in err
    rest = ScriptedExecutor({})
    code, _, _ = batch(tmp_path, rest, max_budget_usd=2.0)
    assert code == 0 and rest.ran == ["t3", "t4"]
    assert rest.job is not None and rest.job.defaults.max_budget_usd == pytest.approx(0.8)


def test_a_usage_limit_not_waited_for_stops_the_batch_with_exit_5(tmp_path: Path, repo: Path) -> None:
    executor = ScriptedExecutor({"t2": ("stopped", 0.0)})
    code, err, _ = batch(tmp_path, executor)
    assert code == 5 and executor.ran == ["t1", "t2"]
    assert "a usage limit stopped a task: stopping the batch" in err


def test_plain_lines_say_each_task_and_the_totals(tmp_path: Path, repo: Path) -> None:
    code, err, out = batch(tmp_path, ScriptedExecutor({"t2": ("failed", 0.25)}), count=3)
    assert code == 1
    lines = err.splitlines()
    assert lines[0] == "loom batch: started t1"
    assert lines[1].startswith("loom batch: done t1 in 0s, $0.0000 (1/3 done · 0 running · 0 failed · $0.00")
    assert lines[3].startswith("loom batch: failed t2 in 0s, $0.2500: x (1/3 done · 0 running · 1 failed · $0.25")
    assert "\x1b" not in err  # not a terminal: nothing redrawn
    assert out.startswith("2 done, 1 failed ($0.25 this run); results: ")
    assert [json.loads(line)["id"] for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()] == [
        "t1", "t2", "t3"]


def test_bad_task_lines_are_named_by_number_and_nothing_runs(tmp_path: Path, repo: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "ok", "prompt": "fine"}\n{"id": "x"}\nnot json\n')
    executor = ScriptedExecutor({})
    with pytest.raises(BatchUsageError) as raised:
        run_batch(BatchRequest(tasks_file=tasks, out_dir=tmp_path / "out"), io.StringIO(), io.StringIO(), executor)
    assert str(raised.value).splitlines()[1:] == ["line 2: missing prompt",
                                                  "line 3: not JSON (Expecting value: line 1 column 1 (char 0))"]
    assert executor.ran == [] and not (tmp_path / "out").exists()


def test_the_ray_executor_without_ray_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as when it is not installed
    monkeypatch.delitem(sys.modules, "loom_cli.batch.ray_executor", raising=False)  # another test's import
    with pytest.raises(BatchUsageError, match=r"^--executor ray (needs Ray: pip install 'loom-agent\[ray\]'|is not "
                                              r"available: .*)$"):
        make_executor(BatchRequest(tasks_file=tmp_path / "t", out_dir=tmp_path, executor="ray"))


def test_a_task_naming_no_repository_runs_where_the_batch_was_started(tmp_path: Path, repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "pkg").mkdir()
    monkeypatch.chdir(repo / "pkg")
    executor = ScriptedExecutor({})
    batch(tmp_path, executor, count=1)
    assert [task.repo for task in executor.given] == [str(repo / "pkg")]
    monkeypatch.chdir(tmp_path)  # not in a repository: a task must name one
    with pytest.raises(BatchUsageError, match="line 1: no repo"):
        batch(tmp_path, ScriptedExecutor({}), count=1)


def test_a_batch_first_removes_the_worktrees_a_killed_batch_left(tmp_path: Path, repo: Path) -> None:
    left = abandoned_worktree(repo, tmp_path / "data")
    code, err, _ = batch(tmp_path, ScriptedExecutor({}), count=1)
    assert code == 0, err
    assert "loom batch: removed 1 worktree left by a batch that ended without cleaning up\n" in err
    assert not left.exists() and git(repo, "worktree", "list").count("\n") == 1
