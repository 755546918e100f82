"""What Loom leaves behind (issue 9, item 19).

Processes a bash command starts and detaches (setsid, nohup, double forks), a run
ended by a timeout, an abort or a signal, and the temp files a killed Loom leaves in
TMPDIR and in the workspace. Processes are found only by a marker unique to each test
in their argv (``exec -a <marker> sleep 300``), never by a machine-wide name search.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from builtin_tools.bash import BashInput, BashTool
from loom_engine.execution import CancelToken
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM
from tests.doubles.loom_command import loom_env as command_env

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks read /proc")


def marked(marker: str) -> list[int]:
    """Live processes whose argv[0] is this test's own marker."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv0 = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")[0]
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argv0 == marker.encode() and state != "Z":
            pids.append(int(name))
    return pids


def wait_until_gone(marker: str, seconds: float = 30.0) -> list[int]:
    """The marked processes still running once they are gone or the bound (a hang, not a timing) passes."""
    deadline = time.monotonic() + seconds
    while (left := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[str]:
    """A name unique to this test, and a script that starts `sleep 300` under it."""
    name = f"loom-test-{uuid.uuid4().hex[:12]}"
    (tmp_path / "start-sleeper").write_text(f'touch "{tmp_path}/{name}.started"\nexec -a {name} sleep 300\n')
    yield name
    for pid in marked(name):  # never leave our own test processes behind
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def sleeper(marker: str) -> str:
    return "bash start-sleeper"


def started(marker: str, folder: Path) -> bool:
    return (folder / f"{marker}.started").exists()


DETACHING = {
    "setsid": "setsid {s} &",
    "setsid --fork": "setsid -f {s}",
    "nohup": "nohup {s} >/dev/null 2>&1 &",
    "double fork": "( ( {s} & ) & )",
    "double fork + setsid": "( setsid {s} & ) &",
    "setsid + disown + redirected": "setsid {s} </dev/null >/dev/null 2>&1 & disown",
    "setsid inside setsid": "setsid bash -c 'setsid {s} &' &",
    "setsid in a subshell": "(setsid {s} &)",
}


def context(root: Path, cancel: CancelToken | None = None) -> ToolContext:
    return ToolContext(workspace=Workspace.at(root), cancel=cancel or CancelToken(), state=ToolSessionState())


@pytest.mark.parametrize("how", sorted(DETACHING))
async def test_nothing_a_command_detaches_outlives_it(how: str, marker: str, tmp_path: Path) -> None:
    # The command waits (at most 5 s) until the detached sleeper has started.
    command = (DETACHING[how].format(s=sleeper(marker))
               + f"\nfor i in $(seq 100); do [ -e {marker}.started ] && break; sleep 0.05; done")
    result = await BashTool().run(BashInput(command=command), context(tmp_path))
    assert "Exit code: 0" in result.content, result.content
    assert started(marker, tmp_path), result.content
    assert wait_until_gone(marker) == [], f"{how}: left running"


async def test_a_timeout_ends_detached_processes_too(marker: str, tmp_path: Path) -> None:
    # The sleeper must have started before the timeout fires: the command waits for it, and
    # the timeout leaves a loaded machine seconds to get there.
    command = (f"setsid {sleeper(marker)} &\nfor i in $(seq 100); do [ -e {marker}.started ] && break; sleep 0.05; done"
               "\nsleep 60")
    result = await BashTool().run(BashInput(command=command, timeout=5), context(tmp_path))
    assert "Timed out" in result.content and started(marker, tmp_path)
    assert wait_until_gone(marker) == []


async def test_an_abort_ends_detached_processes_too(marker: str, tmp_path: Path) -> None:
    cancel = CancelToken()
    run = asyncio.ensure_future(BashTool().run(BashInput(command=f"setsid {sleeper(marker)} & sleep 60"),
                                               context(tmp_path, cancel)))
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing
    while not marked(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert marked(marker), "the command did not start"
    cancel.cancel("test")
    result = await run
    assert "Aborted" in result.content
    assert wait_until_gone(marker) == []


def test_what_is_left_at_exit_is_killed(marker: str, tmp_path: Path) -> None:
    """A process carrying this Loom's marker that outlived its command dies when Loom exits."""
    script = f"""
import os, subprocess, sys
from builtin_tools import bash
from builtin_tools._process_tree import MARKER_VARIABLE, new_marker
bash.prepare_process_cleanup()
env = dict(os.environ, **{{MARKER_VARIABLE: new_marker()}})
subprocess.Popen(["setsid", "bash", "{tmp_path}/start-sleeper"], env=env)
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30, cwd=Path(__file__).parents[2])
    assert wait_until_gone(marker) == []


# --------------------------------------------------------------------------- loom run

def loom_env(tmp_path: Path, server: FakeLLMServer, **extra: str) -> dict[str, str]:
    return command_env(tmp_path, server, api_key="test-key-0000", **extra)


@pytest.fixture
def repo(workspace: Path) -> Path:
    return workspace


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_loom_run_ended_by_a_signal_leaves_nothing(sig: signal.Signals, marker: str, repo: Path,
                                                    tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    (repo / "start-sleeper").write_text((tmp_path / "start-sleeper").read_text())
    fake_llm.enqueue(Reply.tool("bash", {"command": f"setsid {sleeper(marker)} & sleep 120"}),
                     Reply.text("done"))
    proc = subprocess.Popen([*LOOM, "run", "go", "--permission-mode", "bypass"], cwd=repo,
                            env=loom_env(tmp_path, fake_llm), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60  # a bound on a hang: loom run starting under load
        while not marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked(marker), "the command did not start"
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert wait_until_gone(marker) == [], f"{sig.name}: left running"


# --------------------------------------------------------------------------- temp files

def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_stale_temp_files_are_cleaned_at_start_and_live_ones_kept(repo: Path, tmp_path: Path,
                                                                  fake_llm: FakeLLMServer) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    dead, old = dead_pid(), time.time() - 600
    stale = [tmpdir / f"loom-cwd-{dead}-abc123", repo / f".notes.txt.{dead}-0a1b2c3d.loom-tmp",
             repo / "src" / f".main.py.{dead}-ffee0011.loom-tmp"]
    kept = [tmpdir / f"loom-cwd-{os.getpid()}-live01",  # its owner (this test) is alive
            repo / f".notes.txt.{os.getpid()}-0a1b2c3d.loom-tmp",
            tmpdir / "loom-cwd-abcdef",  # no pid in the name: not provably ours to delete
            repo / ".notes.txt.0a1b2c3d.loom-tmp",
            tmpdir / "unrelated.txt", repo / "notes.txt"]
    young = [tmpdir / f"loom-cwd-{dead}-young1"]  # less than a minute old: maybe just made
    for path in stale + kept + young:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    for path in stale + kept:
        os.utime(path, (old, old))
    fake_llm.enqueue(Reply.text("hello"))
    done = subprocess.run([*LOOM, "run", "hi"], cwd=repo, env=loom_env(tmp_path, fake_llm, TMPDIR=str(tmpdir)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing
    while any(p.exists() for p in stale) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in stale if p.exists()] == []
    assert [p for p in kept + young if not p.exists()] == []


async def test_temp_files_carry_their_owner_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The names the clean-up relies on: bash's cwd file and an atomic write's temp file."""
    import tempfile

    from builtin_tools import bash as bash_module

    made: list[str] = []
    real = tempfile.mkstemp

    def spy(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)  # type: ignore[call-overload]
        made.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(bash_module.tempfile, "mkstemp", spy)
    await BashTool().run(BashInput(command="true"), context(tmp_path))
    assert made and all(name.startswith(f"loom-cwd-{os.getpid()}-") for name in made)

    from builtin_tools._files import safe_io as _safe_io
    from builtin_tools.stale_files import CWD_FILE, WRITE_TEMP

    renamed: list[str] = []
    real_rename = os.rename

    def spy_rename(source: str, target: str, **kwargs: object) -> None:
        renamed.append(source)
        real_rename(source, target, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_safe_io.os, "rename", spy_rename)
    _safe_io.write_file_at(tmp_path / "notes.txt", b"x", None, "notes.txt")
    assert (tmp_path / "notes.txt").read_bytes() == b"x"
    match = WRITE_TEMP.fullmatch(renamed[0])
    assert match and int(match.group(1)) == os.getpid()
    assert all(CWD_FILE.fullmatch(name) for name in made)
