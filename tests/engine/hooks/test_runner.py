"""Running a hook process: stdin, environment, args, output cap, timeouts killing the group."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from loom_engine.execution import CancelToken
from loom_engine.hooks.config import HookCommand
from loom_engine.hooks.runner import MAX_OUTPUT_CHARS, hook_environment, run_hook
from tests.doubles.processes import marked_sleep, running_with


def _hook(command: str, *, args: tuple[str, ...] = (), timeout_s: float = 60.0) -> HookCommand:
    return HookCommand(event="PreToolUse", matcher="", command=command, args=args, timeout_s=timeout_s)


async def test_stdin_env_cwd_and_quoted_args(tmp_path: Path) -> None:
    hook = _hook('read -r line; printf "%s|%s|%s|" "$line" "$CLAUDE_PROJECT_DIR" "$PWD"; echo', args=("a b",))
    raw = await run_hook(hook, b'{"x": 1}\n', cwd=tmp_path, env=hook_environment(tmp_path))
    assert raw.exit_code == 0
    assert raw.stdout.strip() == f'{{"x": 1}}|{tmp_path}|{tmp_path}|a b'


async def test_output_is_capped(tmp_path: Path) -> None:
    raw = await run_hook(_hook("python3 -c 'print(\"x\" * 100000)'"), b"", cwd=tmp_path, env=hook_environment(tmp_path))
    assert raw.exit_code == 0 and len(raw.stdout) < MAX_OUTPUT_CHARS + 100 and "output cut" in raw.stdout


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie no container init reaps counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


async def test_a_timeout_kills_what_the_hook_started(tmp_path: Path) -> None:
    marker, pid_file = tmp_path / "late", tmp_path / "pid"
    # The background child writes its pid and the hook waits for it, so the timeout fires
    # with the child running; the check is then that the child is gone (no pause for it).
    hook = _hook(f"(echo $BASHPID > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; sleep 30; touch {marker}) & "
                 f"until [ -e {pid_file} ]; do sleep 0.01; done; sleep 30", timeout_s=2)
    raw = await run_hook(hook, b"", cwd=tmp_path, env=hook_environment(tmp_path))
    assert raw.timed_out and raw.exit_code is None
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing
    while _running(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _running(child) and not marker.exists()


async def test_cancel_stops_the_hook(tmp_path: Path) -> None:
    cancel = CancelToken()
    sleeping = marked_sleep()  # far longer than the bound below: only the cancel ends it in time
    task = asyncio.create_task(run_hook(_hook(f"touch started; {sleeping}"), b"", cwd=tmp_path,
                                        env=hook_environment(tmp_path), cancel=cancel))
    deadline = time.monotonic() + 60  # a bound on a hang
    while not (tmp_path / "started").exists():  # the hook is running: the cancel has something to stop
        assert time.monotonic() < deadline, "the hook never started"
        await asyncio.sleep(0.01)
    cancel.cancel()
    raw = await asyncio.wait_for(task, 60)
    assert raw.aborted and raw.exit_code is None
    assert running_with(sleeping) == []


async def test_a_hook_that_ignores_stdin_is_fine(tmp_path: Path) -> None:
    raw = await run_hook(_hook("exit 0"), b"x" * 1_000_000, cwd=tmp_path, env=hook_environment(tmp_path))
    assert raw.exit_code == 0


async def test_the_same_command_from_two_files_runs_once(tmp_path: Path) -> None:
    from loom_engine.hooks.config import HookSet
    from loom_engine.hooks.engine import HookEngine

    command = "cat >/dev/null; echo x >> ran.txt"
    both = HookSet((HookCommand(event="Stop", matcher="", command=command, source=".claude/settings.json"),
                    HookCommand(event="Stop", matcher="", command=command, source=".loom/settings.toml"),
                    HookCommand(event="Stop", matcher="", command=command + " # other")))
    events: list[object] = []
    await HookEngine(both, tmp_path).fire("Stop", {}, emit=events.append, stamp=dict)
    assert (tmp_path / "ran.txt").read_text() == "x\nx\n" and len(events) == 2
