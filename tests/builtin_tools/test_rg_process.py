"""Running the rg binary: output capture and its cap, streamed paths, abort and cancel.

A shell script stands in for rg so that timing and output are under the test's control.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from builtin_tools._files.rg import SearchCancelled, rg_paths, run_rg, stream_rg_paths
from loom_engine.execution import CancelToken
from tests.doubles.processes import alive

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")


def fake_rg(folder: Path, script: str) -> str:
    path = folder / "fake-rg"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


async def started_pid(pid_file: Path) -> int:
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.01)
    return int(pid_file.read_text())


SLEEPER = 'echo $$ > "{pid}"\nexec sleep 30\n'


async def test_run_rg_returns_output_errors_and_exit_code(tmp_path):
    rg = fake_rg(tmp_path, 'printf "a\\0b\\0"\necho "rg: oops" >&2\nexit 2\n')
    run = await run_rg(rg, [], tmp_path, CancelToken())
    assert (run.stdout, run.stderr, run.returncode, run.truncated) == (b"a\0b\0", "rg: oops\n", 2, False)


async def test_run_rg_stops_a_runaway_search_at_the_cap(tmp_path):
    pid_file = tmp_path / "pid"
    rg = fake_rg(tmp_path, f'echo $$ > "{pid_file}"\nexec yes "some matching line"\n')
    run = await asyncio.wait_for(run_rg(rg, [], tmp_path, CancelToken(), max_bytes=200_000), 10)
    assert run.truncated
    assert len(run.stdout) == 200_000
    assert run.stdout.startswith(b"some matching line\n")
    assert not alive(int(pid_file.read_text()))


async def test_run_rg_kills_the_process_when_the_call_is_cancelled(tmp_path):
    pid_file = tmp_path / "pid"
    rg = fake_rg(tmp_path, SLEEPER.format(pid=pid_file))
    task = asyncio.ensure_future(run_rg(rg, [], tmp_path, CancelToken()))
    pid = await started_pid(pid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(pid)


async def test_run_rg_kills_the_process_on_abort(tmp_path):
    pid_file = tmp_path / "pid"
    rg = fake_rg(tmp_path, SLEEPER.format(pid=pid_file))
    token = CancelToken()
    task = asyncio.ensure_future(run_rg(rg, [], tmp_path, token))
    pid = await started_pid(pid_file)
    token.cancel()
    with pytest.raises(SearchCancelled):
        await task
    assert not alive(pid)


async def test_streamed_paths_arrive_whole_across_writes(tmp_path):
    # A path cut between two writes, and a last path without its NUL.
    script = ('printf "./a.py\\0./src/l"\nsleep 0.2\nprintf "ong_name.py\\0./caf\\303\\251.md\\0"\n'
              'sleep 0.1\nprintf "./last.txt"\n')
    batches: list[list[str]] = []
    code = await stream_rg_paths(fake_rg(tmp_path, script), [], tmp_path, CancelToken(), batches.append)
    assert code == 0
    assert [p for batch in batches for p in batch] == ["a.py", "src/long_name.py", "café.md", "last.txt"]
    assert len(batches) >= 2  # handed over while the process was still running


async def test_streaming_is_killed_on_abort_and_on_cancel(tmp_path):
    for how in ("abort", "cancel"):
        pid_file = tmp_path / f"pid-{how}"
        rg = fake_rg(tmp_path, 'printf "./a\\0"\n' + SLEEPER.format(pid=pid_file))
        token = CancelToken()
        seen: list[str] = []
        task = asyncio.ensure_future(stream_rg_paths(rg, [], tmp_path, token, seen.extend))
        pid = await started_pid(pid_file)
        if how == "abort":
            token.cancel()
            with pytest.raises(SearchCancelled):
                await task
        else:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert not alive(pid), how


async def test_streaming_a_binary_that_cannot_run_raises_oserror(tmp_path):
    broken = tmp_path / "rg"
    broken.write_bytes(b"\x7fELF not really")
    broken.chmod(0o755)
    with pytest.raises(OSError):
        await stream_rg_paths(str(broken), [], tmp_path, CancelToken(), lambda paths: None)


def test_rg_paths_decodes_like_the_filesystem():
    assert rg_paths(b"./a\0./b/c\0d\0") == ["a", "b/c", "d"]
    assert rg_paths(b"./bad\xff.txt\0") == ["bad\udcff.txt"]  # undecodable bytes kept, escaped
