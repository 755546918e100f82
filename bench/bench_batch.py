"""`loom batch` against the shell loop it replaces: 20 trivial tasks (each writes one file
with one tool call, against the fake LLM server, which answers at once), run by
`loom batch --workers 2`, and by 20 `loom run`s one after another, each a fresh process in
a worktree of its own (added before, diffed and removed after: what the batch does for a
task), as a user's loop would. Both timed from process start to exit, in the same run.

A second loop uses the installed `loom` with its warm server up (bench/warm_loom.py), as a
user's loop meets it after the day's first `loom`: each run is then a fork of a process
that has imported Loom, the warm workers' advantage without them.

The model's time is nil here, so what is measured is Loom's own cost per task: start-up,
worktree, agent, diff. `--executor ray` is a third row when Ray is installed (a local Ray
started by the batch, so its start is in the time, as for a user without a cluster).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASKS = int(os.environ.get("BENCH_BATCH_TASKS", "20"))
WORKERS = 2
EDITS = ["--permission-mode", "accept-edits"]


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _repository(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('hello')\n")
    _git(root, "add", ".")
    _git(root, "-c", "user.email=b@example.com", "-c", "user.name=bench", "commit", "-qm", "first")
    return root


def _env(tmp: Path, server: Any, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_", "CLAUDE_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               LOOM_DATA_DIR=str(tmp / name / "data"), LOOM_CONFIG_DIR=str(tmp / name / "config"),
               CLAUDE_CONFIG_DIR=str(tmp / name / "claude"), LOOM_PROVIDER="anthropic",
               LOOM_MODEL="claude-sonnet-4-6", LOOM_WARM="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return env


def _batch(tmp: Path, repo: Path, env: dict[str, str], tasks: Path, name: str, *more: str) -> tuple[float, Path]:
    """`loom batch` from spawn to exit; its results folder."""
    out = tmp / name / "out"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "loom_cli", "batch", str(tasks), "--out", str(out),
                           "--workers", str(WORKERS), *EDITS, *more], cwd=repo, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"loom batch {' '.join(more)} exited {done.returncode}: {done.stderr[-500:]}")
    return wall, out


def _loop(tmp: Path, repo: Path, env: dict[str, str], prompts: list[tuple[str, str]], argv: list[str]) -> list[float]:
    """A user's loop: per task a worktree, `loom run` in it, its diff, the worktree removed.
    Each iteration's wall time, from the worktree's creation to its removal."""
    times = []
    for task_id, prompt in prompts:
        started = time.perf_counter()
        tree = tmp / f"loop-{task_id}"
        _git(repo, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
        done = subprocess.run([*argv, "run", prompt, *EDITS], cwd=tree, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"loom run exited {done.returncode}: {done.stderr[-500:]}")
        _git(tree, "add", "-A")
        (tmp / f"loop-{task_id}.diff").write_text(_git(tree, "diff", "--cached", "--binary", "HEAD"))
        _git(repo, "worktree", "remove", "--force", str(tree))
        times.append(time.perf_counter() - started)
    return times


def _task_seconds(out: Path) -> list[float]:
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    if len(lines) != TASKS or any(line["status"] != "done" or not line["files_changed"] for line in lines):
        raise RuntimeError(f"the batch did not do every task: {out / 'results.jsonl'}")
    return [float(line["duration_s"]) for line in lines]


def _warm_loop_rows(tmp: Path, repo: Path, env: dict[str, str], prompts: list[tuple[str, str]],
                    batch_wall: float) -> list[dict[str, Any]]:
    """The same loop with the installed `loom` and its warm server up (as every `loom` after
    the day's first meets it): each run is a fork of a process that has imported Loom."""
    from .warm_loom import LOOM_SCRIPT, runtime_folder, wait_for_server, warm_env

    if not LOOM_SCRIPT.exists():
        return [row("installed loom: not installed (pip install -e .)", "-", "")]
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the installed Loom, as a user runs it
    with runtime_folder() as runtime:
        warm = warm_env(env, runtime)
        _loop(tmp, repo, warm, prompts[:1], [str(LOOM_SCRIPT)])  # the day's first: starts the server
        wait_for_server(runtime)
        loop = _loop(tmp, repo, warm, prompts, [str(LOOM_SCRIPT)])
    loop_wall = sum(loop)
    return [row(f"{len(prompts)} loom runs in a loop (installed loom, warm server up)", loop_wall, "s"),
            row("per task: one warm loop iteration (median)", statistics.median(loop) * 1000, "ms"),
            # No target: at 20 tasks the batch's own start and end (its workers' import of Loom)
            # weigh as much as the warm server saves; the row shows how much.
            row("loom batch / the warm loop", batch_wall / loop_wall, "x")]


def _ray_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def run() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.doubles.batch_tasks import ByTask, task_line, write_tasks
    from tests.doubles.fake_llm import FakeLLMServer

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp_name, FakeLLMServer() as server:
        tmp = Path(tmp_name)
        server.respond_with(ByTask())
        repo = _repository(tmp / "repo")
        lines = [task_line(f"b{n:02d}") for n in range(1, TASKS + 1)]
        tasks = write_tasks(tmp / "tasks.jsonl", lines)
        prompts = [(str(line["id"]), str(line["prompt"])) for line in lines]
        # A warm file cache for every contender: one `loom run` first, untimed.
        _loop(tmp, repo, _env(tmp, server, "cache"), prompts[:1], [sys.executable, "-m", "loom_cli"])

        batch_wall, out = _batch(tmp, repo, _env(tmp, server, "batch"), tasks, "batch")
        inside = _task_seconds(out)
        loop = _loop(tmp, repo, _env(tmp, server, "loop"), prompts, [sys.executable, "-m", "loom_cli"])
        loop_wall = sum(loop)

        rows.append(row(f"loom batch --workers {WORKERS}: {TASKS} tasks, spawn -> exit", batch_wall, "s"))
        rows.append(row(f"{TASKS} loom runs in a loop (python -m loom_cli, a worktree each)", loop_wall, "s"))
        rows.append(row("loom batch / the loop", batch_wall / loop_wall, "x", f"<= {1 / WORKERS:.2g}",
                        batch_wall / loop_wall <= 1 / WORKERS))
        rows.append(row("per task: loom batch's wall time / tasks", batch_wall / TASKS * 1000, "ms"))
        rows.append(row("per task: one loop iteration (median)", statistics.median(loop) * 1000, "ms"))
        rows.append(row("per task: inside a warm worker (median of results' duration_s)",
                        statistics.median(inside) * 1000, "ms"))
        # What the batch costs besides its tasks: start, the workers' warm-up, the end.
        rows.append(row("loom batch: wall - tasks' time / workers (start, warm-up, end)",
                        (batch_wall - sum(inside) / WORKERS) * 1000, "ms"))

        rows.extend(_warm_loop_rows(tmp, repo, _env(tmp, server, "warm"), prompts, batch_wall))

        if _ray_installed():
            # A scratch HOME: a new local Ray makes ~/.ray/auth_token when there is none.
            ray_env = {**_env(tmp, server, "ray"), "HOME": str(tmp / "ray-home")}
            ray_wall, ray_out = _batch(tmp, repo, ray_env, tasks, "ray", "--executor", "ray")
            _task_seconds(ray_out)
            rows.append(row(f"loom batch --executor ray (a local Ray, started by it): {TASKS} tasks", ray_wall, "s"))
            rows.append(row("loom batch --executor ray / the loop", ray_wall / loop_wall, "x"))
            rows.append(row("loom batch --executor ray / local executor", ray_wall / batch_wall, "x"))
        else:
            rows.append(row("loom batch --executor ray: Ray not installed (pip install 'loom-agent[ray]')", "-", ""))
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
