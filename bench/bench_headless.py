"""Headless start and exit: `loom run` from spawn to the first request the fake LLM server
receives, and from the last request to the process's exit; with Claude Code's `claude -p`
on the same script in the same run when it is installed.

Nothing here imports a provider SDK: the fake server is the test double's plain HTTP
server, and each tool is a child process, timed from just before it is spawned.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_HEADLESS_RUNS", "5"))
COLD_RUNS = 3  # each starts a warm server (a second of CPU beside it): fewer of them
PEERS = Path(os.environ.get("BENCH_PEERS", "/work/peers"))
TASK = "say hello"


@dataclass(frozen=True)
class Timing:
    first_request_s: float  # spawn -> the server has the first request
    exit_tail_s: float  # the server has the last request -> the process has exited
    total_s: float
    requests: int
    code: int


class RequestClock:
    """When each request reached the server, read by a thread the server wakes up."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="request-clock")
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            if self.server.wait_for_requests(len(self.times) + 1, timeout=0.2):
                self.times.append(time.perf_counter())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def timed_run(argv: Sequence[str], cwd: Path, env: dict[str, str], server: Any, replies: Sequence[Any],
              timeout: float = 120) -> Timing:
    server.reset()
    server.enqueue(*replies)
    clock = RequestClock(server)
    started = time.perf_counter()
    # Its own process group: a wrapper's children (Claude Code's native binary) hold the
    # pipes too, and a timeout must end them all.
    process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    ended = time.perf_counter()
    time.sleep(0.05)  # a request recorded at the very end reaches the clock
    clock.stop()
    if not clock.times:
        raise RuntimeError(f"{argv[0]}: no request reached the fake server (exit {process.returncode})")
    return Timing(clock.times[0] - started, ended - clock.times[-1], ended - started, len(clock.times),
                  process.returncode)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _loom_env(tmp: Path, server: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               LOOM_DATA_DIR=str(tmp / "data"), LOOM_CONFIG_DIR=str(tmp / "config"),
               LOOM_PROVIDER="anthropic", LOOM_MODEL="claude-sonnet-4-6")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return env


def _peer_env(tmp: Path, server: Any) -> dict[str, str]:
    home = tmp / "peer-home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=server.openai_base_url,
               DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1", DISABLE_AUTOUPDATER="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    return env


def _peer(name: str) -> Path | None:
    local = PEERS / "node_modules" / ".bin" / name
    if local.exists():
        return local
    found = shutil.which(name)
    return Path(found) if found else None


def _workspace(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "hello.py").write_text("print('hello')\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def installed_loom_rows(tmp: Path, repo: Path, env: dict[str, str], server: Any, their_first: float,
                        their_loop: float) -> list[dict[str, Any]]:
    """The installed `loom run` from process start: cold (no warm server yet: the first
    run, which starts one) and warm (the server up, as every later run meets it)."""
    from tests.doubles.fake_llm import Reply

    from .warm_loom import LOOM_SCRIPT, runtime_folder, wait_for_server, warm_env

    argv = [str(LOOM_SCRIPT), "run", TASK]
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the installed Loom, as a user runs it
    cold = []
    for _ in range(COLD_RUNS):
        with runtime_folder() as runtime:
            cold.append(timed_run(argv, repo, warm_env(env, runtime), server, [Reply.text("hello")]))
    with runtime_folder() as runtime:
        timed_run(argv, repo, warm_env(env, runtime), server, [Reply.text("hello")])
        wait_for_server(runtime)
        warm = [timed_run(argv, repo, warm_env(env, runtime), server, [Reply.text("hello")]) for _ in range(RUNS)]
    failed = [t.code for t in cold + warm if t.code != 0]
    if failed:
        raise RuntimeError(f"the installed loom run exited {failed[0]}")
    cold_first, warm_first = median([t.first_request_s for t in cold]), median([t.first_request_s for t in warm])
    warm_loop = sum(t.total_s for t in warm)
    return [
        row(f"installed loom, cold (no server; median of {COLD_RUNS}): spawn -> first request", cold_first * 1000,
            "ms"),
        row("installed loom, cold: spawn -> first request / Claude Code", cold_first / their_first, "x"),
        row(f"installed loom, warm (server up; median of {RUNS}): spawn -> first request", warm_first * 1000, "ms"),
        row("installed loom, warm: spawn -> first request / Claude Code", warm_first / their_first, "x", "<= 1.3",
            warm_first / their_first <= 1.3),
        row("installed loom, warm: last request -> exit", median([t.exit_tail_s for t in warm]) * 1000, "ms",
            "< 60", median([t.exit_tail_s for t in warm]) < 0.060),
        row(f"{RUNS} one-shot tasks in a loop: installed loom, warm", warm_loop * 1000, "ms"),
        row("installed loom, warm: one-shot tasks in a loop / Claude Code", warm_loop / their_loop, "x", "<= 1.5",
            warm_loop / their_loop <= 1.5),
    ]


def run() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.doubles.fake_llm import FakeLLMServer, Reply

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp_name, FakeLLMServer() as server:
        tmp = Path(tmp_name)
        repo = _workspace(tmp)
        loom_argv = [sys.executable, "-m", "loom_cli", "run", TASK]
        env = _loom_env(tmp, server)
        timed_run(loom_argv, repo, env, server, [Reply.text("hello")])  # a warm file cache for every tool
        one_turn = [timed_run(loom_argv, repo, env, server, [Reply.text("hello")]) for _ in range(RUNS)]
        failed = [t.code for t in one_turn if t.code != 0]
        if failed:
            raise RuntimeError(f"loom run exited {failed[0]}")
        read = Reply.tool("read_file", {"path": "hello.py"})
        read_then_answer = [read, read, Reply.text("It prints hello.")]
        three_turns = [timed_run(loom_argv, repo, env, server, read_then_answer) for _ in range(RUNS)]
        first = median([t.first_request_s for t in one_turn])
        tail = median([t.exit_tail_s for t in one_turn + three_turns])
        rows.append(row(f"python -m loom_cli run (no warm server): spawn -> first request (median of {RUNS})",
                        first * 1000, "ms"))
        rows.append(row("loom run: last request -> exit", tail * 1000, "ms", "< 60", tail < 0.060))
        rows.append(row("loom run: whole 1-turn run", median([t.total_s for t in one_turn]) * 1000, "ms"))
        rows.append(row("loom run: whole 3-turn run (2 file reads)", median([t.total_s for t in three_turns]) * 1000,
                        "ms"))

        claude = _peer("claude")
        if claude is None:
            rows.append(row("Claude Code: not installed (npm install @anthropic-ai/claude-code)", "-", ""))
        else:
            peer_env = _peer_env(tmp, server)
            argv = [str(claude), "-p", TASK, "--model", "claude-sonnet-4-5"]
            replies = [Reply.text("hello")] * 8  # side requests (titles, quota checks) get an answer too
            timed_run(argv, repo, peer_env, server, replies)
            theirs = [timed_run(argv, repo, peer_env, server, replies) for _ in range(RUNS)]
            their_first = median([t.first_request_s for t in theirs])
            rows.append(row("Claude Code -p: spawn -> first request", their_first * 1000, "ms"))
            rows.append(row("Claude Code -p: last request -> exit", median([t.exit_tail_s for t in theirs]) * 1000,
                            "ms"))
            # The targets are the installed `loom`'s (installed_loom_rows): these are the process
            # without a warm server, for comparison.
            rows.append(row("spawn -> first request: python -m loom_cli / Claude Code", first / their_first, "x"))
            # The runs above, one after another: a loop of one-shot tasks, each from spawn to exit.
            our_loop, their_loop = sum(t.total_s for t in one_turn), sum(t.total_s for t in theirs)
            rows.append(row(f"{RUNS} one-shot tasks in a loop: python -m loom_cli", our_loop * 1000, "ms"))
            rows.append(row(f"{RUNS} one-shot tasks in a loop: Claude Code -p", their_loop * 1000, "ms"))
            rows.append(row("one-shot tasks in a loop: python -m loom_cli / Claude Code", our_loop / their_loop, "x"))
            rows.extend(installed_loom_rows(tmp, repo, env, server, their_first, their_loop))
        if _peer("codex") is not None:
            # Codex speaks only OpenAI's Responses API (over a WebSocket first), which the
            # fake server does not serve: no run of it here would reach the server.
            rows.append(row("Codex exec: not comparable (Responses API; the fake server has Chat Completions)",
                            "-", ""))
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
