"""`loom batch --executor ray` against the fake server, on one local Ray cluster the module
starts (the installed `loom batch` connects to it with ``--address``, as to a cluster):
tasks on two worker actors in their own worktrees, results, diffs and SWE-bench
predictions written by the driver, the user's checkout untouched, a failing task recorded,
a rerun that sends nothing, and Ctrl+C stopping the running tasks cleanly. Kept to two
batches on Ray (each pays for two warm workers): the suite's time is spent elsewhere.

The scenarios that need the cluster run in one test, one after another: a local Ray costs
~14 s of a core to start, and as separate tests the suite's workers would each start one
(the scheduler spreads a module's tests), several at once on a loaded machine."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'loom-agent[ray]'; CI installs it)")

from tests.doubles.batch_tasks import (  # noqa: E402
    ByTask,
    checkout_state,
    git,
    interrupted_batch,
    task_line,
    task_of,
    user_repository,
    write_tasks,
)
from tests.doubles.fake_llm import FakeLLMServer, Reply  # noqa: E402
from tests.doubles.loom_command import loom, loom_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@contextmanager
def local_cluster(home: Path) -> Iterator[str]:
    """The address of a local Ray (2 CPUs, a small object store, no dashboard), connected.
    A new local Ray makes a cluster token in ~/.ray/auth_token when there is none (and from
    then on every Ray of that user turns token authentication on): HOME is a scratch folder
    while it runs, so the tester's own stays as it was."""
    home.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        # Ray sets RAY_AUTH_MODE=token in this process for its new cluster: recorded as it was
        # (for the undo), then unset, as Ray expects it for its default.
        patch.setenv("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", ""))
        patch.delenv("RAY_AUTH_MODE")
        terminate = signal.getsignal(signal.SIGTERM)  # ray.init takes SIGTERM over; pytest's comes back
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024 * 1024, log_to_driver=False,
                 logging_level="ERROR")
        signal.signal(signal.SIGTERM, terminate)
        try:
            yield ray.get_runtime_context().gcs_address
        finally:
            ray.shutdown()


def ray_batch(address: str, *more: str) -> list[str]:
    return ["--permission-mode", "accept-edits", "--workers", "2", "--executor", "ray", "--address", address,
            *more]


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def loom_workers() -> list[dict[str, Any]]:
    """The batch's worker actors the cluster has seen (alive or gone)."""
    from ray._private.state import actors

    return [actor for actor in actors().values() if actor["ActorClassName"].endswith("LoomWorker")]


@pytest.mark.timeout(600)  # four scenarios and a cluster's start, on a machine that may be loaded
def test_batch_on_one_ray_cluster(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    with local_cluster(tmp_path / "ray-home") as cluster:
        the_gate_is_one_for_every_worker_process()
        workers_that_cannot_start_are_one_line_and_no_task_starts(scratch(tmp_path, "unstartable"))
        tasks_run_on_ray_workers_each_in_its_worktree(scratch(tmp_path, "tasks"), fake_llm, cluster)
        ctrl_c_stops_the_tasks_on_the_ray_workers_cleanly(scratch(tmp_path, "ctrl-c"), fake_llm, cluster)


def scratch(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def tasks_run_on_ray_workers_each_in_its_worktree(tmp_path: Path, fake_llm: FakeLLMServer, cluster: str) -> None:
    repo = user_repository(tmp_path / "repo")
    before = checkout_state(repo)
    ids = ["t1", "t2", "t3", "t4"]
    tasks = write_tasks(tmp_path / "tasks.jsonl", [*(task_line(i) for i in ids), task_line("broken")])
    fake_llm.respond_with(ByTask(special={"broken": lambda request: Reply.error(
        400, "the model refused this request", type="invalid_request_error")}))
    out, env = tmp_path / "out", loom_env(tmp_path, fake_llm)
    workers_before = len(loom_workers())

    done = loom(["batch", str(tasks), "--out", str(out), *ray_batch(cluster)], repo, env, timeout=120)

    assert done.returncode == 1, done.stderr  # a task failed
    assert done.stdout.startswith("4 done, 1 failed"), done.stdout
    assert len(loom_workers()) - workers_before == 2  # --workers 2: two actors, each ran task after task
    lines = {line["id"]: line for line in results(out)}
    assert set(lines) == {*ids, "broken"}
    for task_id in ids:
        line = lines[task_id]
        assert line["status"] == "done" and line["files_changed"] == [f"{task_id}.txt"], line
        assert line["turns"] == 2 and line["session_id"] and line["diff_path"] == f"diffs/{task_id}.diff"
    assert lines["broken"]["status"] == "failed" and "the model refused this request" in lines["broken"]["error"]
    # The diffs came back from the workers and the driver wrote them, and the predictions from them.
    preds = json.loads((out / "preds.json").read_text())
    assert set(preds) == set(ids)
    for task_id in ids:
        patch = (out / "diffs" / f"{task_id}.diff").read_text()
        assert preds[task_id]["model_patch"] == patch
        assert patch.count("diff --git") == 1 and f"+made by {task_id}" in patch
    assert checkout_state(repo) == before  # status, HEAD, branches, stash, index, files
    assert git(repo, "worktree", "list").count("\n") == 1  # every task's worktree removed on its worker
    assert "test-key" not in done.stdout + done.stderr

    sent = len(fake_llm.requests)
    again = loom(["batch", str(tasks), "--out", str(out), *ray_batch(cluster)], repo, env, timeout=120)
    assert again.returncode == 1 and len(fake_llm.requests) == sent, again.stderr  # nothing to run, no request
    assert len(loom_workers()) - workers_before == 2  # and no worker started for it


def ctrl_c_stops_the_tasks_on_the_ray_workers_cleanly(tmp_path: Path, fake_llm: FakeLLMServer, cluster: str) -> None:
    repo = user_repository(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{n}") for n in range(1, 5)])
    out, env = tmp_path / "out", loom_env(tmp_path, fake_llm)
    earlier = len(fake_llm.requests)
    code, stdout, stderr = interrupted_batch([str(tasks), "--out", str(out), *ray_batch(cluster)], repo, env,
                                             fake_llm)
    assert code == 130, stderr
    stopped = results(out)
    # The workers' tasks were interrupted mid-request: the batch ended while their answers were
    # still held back (released only after it exited).
    assert sorted(line["id"] for line in stopped) == sorted(task_of(r) for r in fake_llm.requests[earlier:])
    assert all(line["status"] == "stopped" and line["session_id"] for line in stopped), stopped
    assert all("interrupted" in line["error"] for line in stopped), stopped
    assert "2 stopped, 2 not run" in stdout, stdout
    assert git(repo, "worktree", "list").count("\n") == 1
    sessions = Path(env["LOOM_DATA_DIR"]) / "sessions"
    assert all((sessions / f"{line['session_id']}.jsonl").is_file() for line in stopped)  # resumable

    fake_llm.respond_with(ByTask())  # a rerun on the cluster completes the rest
    again = loom(["batch", str(tasks), "--out", str(out), *ray_batch(cluster)], repo, env, timeout=240)
    assert again.returncode == 0, again.stderr
    assert {line["id"]: line["status"] for line in results(out)} == {f"t{n}": "done" for n in range(1, 5)}
    assert git(repo, "worktree", "list").count("\n") == 1


def workers_that_cannot_start_are_one_line_and_no_task_starts(tmp_path: Path) -> None:
    """As when Loom is missing on the nodes: the batch ends saying why, in one line (exit 2
    from `loom batch`), with no task started and none failed for it (a rerun runs them all)."""
    from loom_cli.batch.executor import BatchEvent
    from loom_cli.batch.job import BatchJob
    from loom_cli.batch.ray_executor import ClusterError, RayExecutor
    from loom_cli.batch.tasks import BatchTask

    broken = BatchJob(out_dir=tmp_path / "out", environment=(("LOOM_BROKEN", None),))  # type: ignore[arg-type]
    tasks = [BatchTask(id=f"t{n}", prompt="p", repo=str(tmp_path)) for n in range(1, 4)]
    seen: list[BatchEvent] = []
    with pytest.raises(ClusterError) as raised:
        RayExecutor(workers=2).run(tasks, broken, seen.append, threading.Event())
    assert str(raised.value).startswith("the Ray workers could not start: TypeError")
    assert "\n" not in str(raised.value) and "\x1b" not in str(raised.value)
    assert seen == []


def the_gate_is_one_for_every_worker_process() -> None:
    """A hold made in one Ray worker process is what the driver (and every worker) reads;
    a later reset held by another worker extends it, an earlier one does not shorten it."""
    from loom_cli.batch.ray_gate import RayGate

    @ray.remote(num_cpus=0)
    def hold(gate: RayGate, until: float) -> float:
        gate.hold_until(until)
        return gate.held_until()

    gate = RayGate.start()
    try:
        assert gate.held_until() == 0.0
        assert ray.get(hold.remote(gate, 2000.0)) == 2000.0
        assert ray.get(hold.remote(gate, 1000.0)) == 2000.0
        gate.hold_until(3000.0)
        assert ray.get(hold.remote(gate, 0.0)) == 3000.0
    finally:
        gate.close()


def test_a_head_that_does_not_answer_is_one_line_at_once(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    repo = user_repository(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line("t1")])
    with socket.socket() as probe:  # a port just bound and closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    done = loom(["batch", str(tasks), "--out", str(tmp_path / "out"), *ray_batch(address)], repo,
                loom_env(tmp_path, fake_llm))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"loom: Ray at {address}: nothing answers there")
    assert fake_llm.requests == []


def test_loom_and_its_engine_never_import_ray() -> None:
    code = ("import importlib, pkgutil, sys, loom_engine, loom_cli.main, loom_cli.batch.command, loom_cli.batch.local\n"
            "for info in pkgutil.walk_packages(loom_engine.__path__, 'loom_engine.'):\n"
            "    importlib.import_module(info.name)\n"
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
