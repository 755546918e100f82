"""For `loom batch` tests: a user's repository with work in progress (that a batch must not
touch), a tasks file, and fake-server answers chosen by the task a request is for (workers
send at once, so the queue's order would give a task another's answer)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, RecordedRequest, Reply

_ROOT = Path(__file__).resolve().parents[2]
# How long a batch's two workers may take to send their first requests before a test fails.
WORKERS_START_DEADLINE = 240.0

_MARK = re.compile(r"batch-task:([A-Za-z0-9._-]+)")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def user_repository(root: Path) -> Path:
    """A repository as a user leaves it mid-work: two commits, a branch, a stash, a staged
    edit, an unstaged one and an untracked file."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "user@example.com")
    git(root, "config", "user.name", "User")
    (root / "app.py").write_text("print('hello')\n")
    (root / "notes.md").write_text("# notes\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    (root / "app.py").write_text("print('hello, world')\n")
    git(root, "commit", "-qam", "second")
    git(root, "branch", "feature")
    (root / "notes.md").write_text("# notes\nstashed\n")
    git(root, "stash", "-q")
    (root / "app.py").write_text("print('staged')\n")
    git(root, "add", "app.py")
    (root / "notes.md").write_text("# notes\nunstaged\n")
    (root / "scratch.txt").write_text("untracked\n")
    return root


def checkout_state(repo: Path) -> dict[str, object]:
    """Everything of the user's checkout a batch must leave as it was, byte for byte."""
    return {"status": git(repo, "status", "--porcelain=v1", "-uall"), "head": git(repo, "rev-parse", "HEAD"),
            "branches": git(repo, "branch", "-a", "-v"), "stash": git(repo, "stash", "list"),
            "index": (repo / ".git" / "index").read_bytes(),
            "files": {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}}


def write_tasks(path: Path, tasks: Iterable[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(dict(task)) + "\n" for task in tasks))
    return path


def task_line(task_id: str, **more: object) -> dict[str, object]:
    """A task whose prompt carries its mark, so the fake server knows which task asks."""
    return {"id": task_id, "prompt": f"Create the file for batch-task:{task_id}", **more}


def task_of(request: RecordedRequest) -> str:
    found = _MARK.search(request.raw.decode(errors="replace"))
    assert found is not None, "a request without a task's mark"
    return found.group(1)


def answered_tool(request: RecordedRequest) -> bool:
    return b'"tool_result"' in request.raw


@dataclass
class ByTask:
    """Answers each task's first request with a write_file of ``<id>.txt`` and its next with
    "done"; ``special`` answers a task's request instead (first request only when it
    returns None for a later one). Records when each request of each task arrived."""

    special: Mapping[str, Callable[[RecordedRequest], Reply | None]] = field(default_factory=dict)
    arrivals: dict[str, list[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: RecordedRequest) -> Reply:
        task_id = task_of(request)
        with self._lock:
            self.arrivals.setdefault(task_id, []).append(time.time())
        if task_id in self.special:
            reply = self.special[task_id](request)
            if reply is not None:
                return reply
        if answered_tool(request):
            return Reply(text=f"created {task_id}.txt")
        return Reply.tool("write_file", {"path": f"{task_id}.txt", "content": f"made by {task_id}\n"})


def interrupted_batch(args: list[str], repo: Path, env: dict[str, str],
                      fake_llm: FakeLLMServer) -> tuple[int, str, str]:
    """`loom batch ARGS` whose two workers' first requests are held; SIGINT once both are
    in, then the answers released after the batch ended: (exit code, stdout, stderr).

    The wait for the two requests is a deadline for a failure, long because workers start
    slowly on a loaded machine (Ray's more so); a batch that ends first is reported with its
    stderr at once."""
    from tests.doubles.loom_command import LOOM

    release = threading.Event()
    held = Reply(text="never sent", gate=release)
    fake_llm.respond_with(lambda request: held)
    started, already = time.monotonic(), len(fake_llm.requests)
    batch = subprocess.Popen([*LOOM, "batch", *args], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not fake_llm.wait_for_requests(already + 2, timeout=1.0):
            if batch.poll() is not None or time.monotonic() - started > WORKERS_START_DEADLINE:
                batch.kill()
                _, stderr = batch.communicate()
                raise AssertionError(f"the two workers did not start their tasks: {stderr}")
        batch.send_signal(signal.SIGINT)
        stdout, stderr = batch.communicate(timeout=60)
    finally:
        release.set()
        if batch.poll() is None:
            batch.kill()
    return batch.returncode, stdout, stderr


def abandoned_worktree(repo: Path, data_folder: Path) -> Path:
    """A task's worktree of ``repo`` whose worker was killed before it could remove it (its
    lease left in ``data_folder``, unlocked): the worktree's folder."""
    dies = ("import os, sys; from loom_cli.batch.worktrees import add_worktree; "
            "print(add_worktree(sys.argv[1], None, 'dead').path, flush=True); os.kill(os.getpid(), 9)")
    killed = subprocess.run([sys.executable, "-c", dies, str(repo)], cwd=_ROOT, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "LOOM_DATA_DIR": str(data_folder)})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    return Path(killed.stdout.strip())
