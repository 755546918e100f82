"""The installed `loom batch` against the fake server: tasks in their own worktrees on two
warm workers, results and SWE-bench predictions, the user's checkout untouched, reruns,
Ctrl+C, and one usage limit for all workers."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from loom_engine.sessions.store import SessionStore
from tests.doubles.batch_tasks import (
    ByTask,
    answered_tool,
    checkout_state,
    git,
    interrupted_batch,
    task_line,
    task_of,
    user_repository,
    write_tasks,
)
from tests.doubles.fake_llm import FakeLLMServer, RecordedRequest, Reply
from tests.doubles.loom_command import LOOM, loom, loom_env
from tests.doubles.processes import alive, children_of

EDITS = ["--permission-mode", "accept-edits", "--workers", "2"]


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_tasks_run_in_their_own_worktrees_and_a_rerun_skips_what_is_finished(tmp_path: Path,
                                                                              fake_llm: FakeLLMServer) -> None:
    repo = user_repository(tmp_path / "repo")
    before = checkout_state(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    ids = ["t1", "t2", "t3", "t4"]
    tasks = write_tasks(tmp_path / "tasks.jsonl", [*(task_line(i) for i in ids), task_line("broken")])
    answers = ByTask(special={"broken": lambda request: Reply.error(400, "the model refused this request",
                                                                    type="invalid_request_error")})
    fake_llm.respond_with(answers)
    out, env = tmp_path / "out", loom_env(tmp_path, fake_llm)

    done = loom(["batch", str(tasks), "--out", str(out), *EDITS], repo, env)

    assert done.returncode == 1, done.stderr  # a task failed
    assert done.stdout.startswith("4 done, 1 failed"), (done.stdout, (out / "results.jsonl").read_text())
    lines = {line["id"]: line for line in results(out)}
    assert set(lines) == {*ids, "broken"}
    for task_id in ids:
        line = lines[task_id]
        assert line["status"] == "done" and line["files_changed"] == [f"{task_id}.txt"], line
        assert line["turns"] == 2 and line["session_id"] and line["cost_usd"] > 0 and line["error"] is None
    assert lines["broken"]["status"] == "failed" and "the model refused this request" in str(lines["broken"]["error"])
    preds = json.loads((out / "preds.json").read_text())
    assert set(preds) == set(ids)  # a failed task has no prediction
    assert preds["t1"]["instance_id"] == "t1" and preds["t1"]["model_name_or_path"] == "loom-claude-sonnet-4-6"
    # Each task's patch holds its own file only, and applies to the base.
    apply_to = tmp_path / "clean"
    git(repo, "worktree", "add", "-q", "--detach", str(apply_to), head)
    for task_id in ids:
        patch = tmp_path / f"{task_id}.patch"
        patch.write_text(preds[task_id]["model_patch"])
        assert (out / "diffs" / f"{task_id}.diff").read_text() == preds[task_id]["model_patch"]
        git(apply_to, "apply", "--check", str(patch))
        assert preds[task_id]["model_patch"].count("diff --git") == 1 and f"made by {task_id}" in preds[task_id][
            "model_patch"]
    git(repo, "worktree", "remove", str(apply_to))
    assert checkout_state(repo) == before  # status, HEAD, branches, stash, index, files
    assert git(repo, "worktree", "list").count("\n") == 1  # every task's worktree removed

    sent = len(fake_llm.requests)
    again = loom(["batch", str(tasks), "--out", str(out), *EDITS], repo, env)
    assert again.returncode == 1 and len(fake_llm.requests) == sent  # nothing to run, no request
    assert "5 of 5 tasks finished in an earlier run: skipped (--retry-failed runs the failed ones again)" in \
        again.stderr

    answers.special = {}
    retried = loom(["batch", str(tasks), "--out", str(out), *EDITS, "--retry-failed", "--keep-worktrees"], repo, env)
    assert retried.returncode == 0, retried.stderr
    kept = [Path(line.split()[0]) for line in git(repo, "worktree", "list").splitlines()[1:]]
    assert len(kept) == 1 and (kept[0] / "broken.txt").read_text() == "made by broken\n"  # the task's own, left
    git(repo, "worktree", "remove", "--force", str(kept[0]))
    assert {task_of(r) for r in fake_llm.requests[sent:]} == {"broken"}
    assert results(out)[-1]["id"] == "broken" and results(out)[-1]["status"] == "done"
    assert "broken" in json.loads((out / "preds.json").read_text())


def test_workers_end_with_a_driver_killed_outright(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    repo = user_repository(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line("t1"), task_line("t2")])
    release = threading.Event()
    fake_llm.respond_with(lambda request: Reply(text="never sent", gate=release))
    batch = subprocess.Popen([*LOOM, "batch", str(tasks), "--out", str(tmp_path / "out"), *EDITS], cwd=repo,
                             env=loom_env(tmp_path, fake_llm), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert fake_llm.wait_for_requests(2), "the two workers did not start their tasks"
        workers = children_of({batch.pid})
        assert len(workers) >= 2, workers  # the two workers (and multiprocessing's resource tracker)
        batch.kill()  # no Ctrl+C, no clean-up: the driver is just gone
        batch.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "a worker outlived its driver"
            time.sleep(0.05)
    finally:
        release.set()
        if batch.poll() is None:
            batch.kill()


def test_ctrl_c_stops_the_running_tasks_and_a_rerun_completes_the_rest(tmp_path: Path,
                                                                       fake_llm: FakeLLMServer) -> None:
    repo = user_repository(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{n}") for n in range(1, 5)])
    out, env = tmp_path / "out", loom_env(tmp_path, fake_llm)
    code, stdout, stderr = interrupted_batch([str(tasks), "--out", str(out), *EDITS], repo, env, fake_llm)
    assert code == 130, stderr
    assert "stopping: the running tasks end their sessions" in stderr
    stopped = results(out)
    assert sorted(line["id"] for line in stopped) == ["t1", "t2"]
    assert all(line["status"] == "stopped" and line["session_id"] for line in stopped), stopped
    assert stdout.startswith("0 done, 0 failed, 2 stopped, 2 not run"), stdout
    assert git(repo, "worktree", "list").count("\n") == 1
    store = SessionStore(Path(env["LOOM_DATA_DIR"]) / "sessions")
    for line in stopped:  # each stopped task's session is whole and can be resumed: its prompt, no repair
        loaded = store.load(str(line["session_id"]))
        assert f"batch-task:{line['id']}" in loaded.info.first_prompt and loaded.repaired == ()
        assert Path(loaded.info.workspace).name.startswith(f"loom-batch-{line['id']}-")  # its worktree

    fake_llm.respond_with(ByTask())
    again = loom(["batch", str(tasks), "--out", str(out), *EDITS], repo, env)
    assert again.returncode == 0, again.stderr
    assert {line["id"]: line["status"] for line in results(out)} == {f"t{n}": "done" for n in range(1, 5)}


def test_one_usage_limit_pauses_every_worker(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    repo = user_repository(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line("first"), task_line("second")])
    limit_sent_at: list[float] = []
    gate_held = threading.Event()  # the batch said every worker waits: the first worker holds the gate
    reset_in = 2.0

    def first(request: RecordedRequest) -> Reply | None:
        if limit_sent_at or answered_tool(request):
            return None
        limit_sent_at.append(time.time())
        return Reply.usage_limit(reset_in=reset_in)

    def second(request: RecordedRequest) -> Reply | None:
        # Its first answer comes once the gate is held; it meets no limit itself, and its next
        # request, which it would send at once, waits for the other worker's reset.
        return None if answered_tool(request) else Reply.tool(
            "write_file", {"path": "second.txt", "content": "made by second\n"}, gate=gate_held)

    answers = ByTask(special={"first": first, "second": second})
    fake_llm.respond_with(answers)
    batch = subprocess.Popen([*LOOM, "batch", str(tasks), "--out", str(tmp_path / "out"), *EDITS, "--max-wait", "1m"],
                             cwd=repo, env=loom_env(tmp_path, fake_llm), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said: list[str] = []

    def read_stderr() -> None:
        assert batch.stderr is not None
        for line in batch.stderr:
            said.append(line)
            if line.startswith("loom batch: usage limit: every worker waits; it resets at "):
                gate_held.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert batch.wait(timeout=60) == 0, "".join(said)
    finally:
        gate_held.set()
        if batch.poll() is None:
            batch.kill()
    reader.join(10)
    assert [line["status"] for line in results(tmp_path / "out")] == ["done", "done"], "".join(said)
    resets_at = limit_sent_at[0] + reset_in
    # The second worker met no limit itself, yet its next request waited for the first's reset.
    assert len(answers.arrivals["second"]) == 2 and answers.arrivals["second"][1] >= resets_at, "".join(said)
    assert answers.arrivals["first"][1] >= resets_at
