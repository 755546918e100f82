"""The installed `loom` with its warm server on, in a private runtime folder of its own.

The suite runs with ``LOOM_WARM=0`` (tests/conftest.py); these helpers turn it back on for
one test, point ``XDG_RUNTIME_DIR`` at a fresh 0700 folder (short, for the socket's
108-byte limit) and stop whatever server the test started. An audit hook on the path logs
which processes import ``loom_cli.main``: a `loom` that ran warm never does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.loom_command import loom_env

LOOM_SCRIPT = Path(sys.executable).with_name("loom")
ROOT = Path(__file__).resolve().parents[2]
SERVER_START_S = 180.0  # the server imports all of Loom and both SDKs before it listens

_HOOK = '''
import os, sys
_path = os.environ.get("LOOM_TEST_MAIN_LOG")
if _path:
    def _log(event, args):
        if event == "import" and args[0] == "loom_cli.main":
            _fd = os.open(_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(_fd, f"{os.getpid()}\\n".encode())
            os.close(_fd)
    sys.addaudithook(_log)
'''


@dataclass(frozen=True)
class WarmPlace:
    runtime: Path  # XDG_RUNTIME_DIR
    main_log: Path  # pids of the processes that imported loom_cli.main
    hook: Path  # the folder of the sitecustomize that writes main_log

    @property
    def folder(self) -> Path:
        return self.runtime / "loom"

    def sockets(self) -> list[Path]:
        return sorted(self.folder.glob("loom-*.sock")) if self.folder.is_dir() else []

    def imported_main(self, pid: int) -> bool:
        return self.main_log.exists() and str(pid) in self.main_log.read_text().split()


def until(condition: Callable[[], bool], what: str, timeout: float = SERVER_START_S) -> None:
    """Wait for ``condition`` (an event: a socket appears, a process is gone), polling."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def warm_place(tmp_path: Path) -> Iterator[WarmPlace]:
    """A fresh runtime folder (the hook and the log in ``tmp_path``); on leaving, its
    servers are stopped and it is removed."""
    runtime = Path(tempfile.mkdtemp(prefix="lw-"))
    os.chmod(runtime, 0o700)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOOK)
    place = WarmPlace(runtime, tmp_path / "main.log", hook)
    try:
        yield place
    finally:
        stop_servers(place)
        shutil.rmtree(runtime, ignore_errors=True)


def stop_servers(place: WarmPlace) -> None:
    """SIGTERM to each server whose lock file is held (its pid from /proc's lock table)."""
    for lock in place.folder.glob("*.lock") if place.folder.is_dir() else []:
        for pid in _lock_holders(lock):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def _lock_holders(path: Path) -> list[int]:
    inode = os.stat(path).st_ino
    holders = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[5].endswith(f":{inode}"):
            holders.append(int(fields[4]))
    return holders


def warm_env(tmp_path: Path, place: WarmPlace, server: FakeLLMServer, **extra: str) -> dict[str, str]:
    hook = str(place.hook)
    return loom_env(tmp_path, server, LOOM_WARM="1", XDG_RUNTIME_DIR=str(place.runtime),
                    LOOM_TEST_MAIN_LOG=str(place.main_log),
                    PYTHONPATH=os.pathsep.join(p for p in (hook, str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
                    **extra)


def start_loom(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(LOOM_SCRIPT), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_loom(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, pid) of the installed `loom ARGS`."""
    process = start_loom(args, cwd, env)
    out, err = process.communicate(timeout=120)
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace"), process.pid


def warmed(place: WarmPlace, cwd: Path, env: dict[str, str]) -> None:
    """A first `loom` (cold), then the server it started, ready."""
    code, _out, err, _pid = run_loom(["--version"], cwd, env)
    assert code == 0, err
    until(lambda: bool(place.sockets()), "the warm server's socket")
