"""Running one hook command: a shell process fed the payload on stdin.

Like Claude Code, the command line goes through the shell (so ``$CLAUDE_PROJECT_DIR/x.sh``
and pipes work), with ``args`` appended shell-quoted. The process gets its own process
group, so a timeout or an abort kills everything it started, not just the shell.

A project's hook (``hook.in_project``) runs inside the session's sandbox, so it can do
no more than the model's own bash: write in the workspace, read what is not hidden, no
network. Where the sandbox is required (mode ``on``) and cannot start, it is not run.
The user's own hooks are their own programs and run as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..execution import CancelToken
from ..providers.names import OWN_ENV_PREFIXES
from .config import HookCommand
from .pins import changed_pin

if TYPE_CHECKING:
    from ..sandbox.sandbox import Sandbox

MAX_OUTPUT_CHARS = 10_000
_READ_CHUNK = 65_536


@dataclass(frozen=True)
class RawRun:
    """What the process did. ``exit_code`` is None when it did not finish by itself."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    aborted: bool = False
    failure: str = ""  # could not be started
    duration_ms: float = 0.0


def command_line(hook: HookCommand) -> str:
    if not hook.args:
        return hook.command
    return hook.command + " " + " ".join(shlex.quote(a) for a in hook.args)


def hook_environment(root: Path, hook: HookCommand | None = None,
                     base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment ``hook`` runs in, plus where the project is (both spellings scripts use).

    The user's own hooks (user config) are their own programs: they get the whole
    environment. A project's hooks were written by whoever wrote the repository; trusting
    them to run is not handing them Loom's credentials and settings (ANTHROPIC_API_KEY,
    LOOM_*...), the rule Loom applies to MCP servers too.
    """
    env = dict(os.environ if base is None else base)
    if hook is not None and hook.in_project:
        env = {k: v for k, v in env.items() if not k.startswith(OWN_ENV_PREFIXES)}
        # Its folder is pinned as trusted (see .pins): Python's __pycache__ written there
        # would read as a change, and the hook would stop running after its first run.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["LOOM_PROJECT_DIR"] = str(root)
    env["CLAUDE_PROJECT_DIR"] = str(root)
    return env


def changed_since_trusted(hook: HookCommand) -> str | None:
    """The first folder the hook was trusted with that is no longer as it was (a file in
    it changed, added, gone, unreadable), or None. Code the model edited in this session,
    or a pull changed, must not run on the strength of the user's earlier yes."""
    return changed_pin(hook.pinned)


def confining(hook: HookCommand, sandbox: Sandbox | None) -> Sandbox | None:
    """The sandbox ``hook`` runs in: the session's for a project's hook, none for the user's own."""
    return sandbox if hook.in_project and sandbox is not None and sandbox.active else None


async def run_hook(hook: HookCommand, payload: bytes, *, cwd: Path, env: Mapping[str, str],
                   cancel: CancelToken | None = None, sandbox: Sandbox | None = None) -> RawRun:
    """Run ``hook`` fed ``payload``. ``sandbox``: the session's, which a project hook runs in."""
    started = time.monotonic()

    def elapsed() -> float:
        return (time.monotonic() - started) * 1000

    changed = changed_since_trusted(hook)
    if changed is not None:
        return RawRun(None, failure=f"not run: {changed} changed since you trusted this hook (Loom asks again at "
                                    "its next start)", duration_ms=elapsed())
    confined = confining(hook, sandbox)
    if hook.in_project and sandbox is not None and sandbox.status.refuses_commands:
        return RawRun(None, failure=f"not run: the sandbox is required (mode on) but cannot start: "
                                    f"{sandbox.status.reason}", duration_ms=elapsed())
    with contextlib.ExitStack() as stack:
        try:
            if confined is not None:
                launch = stack.enter_context(confined.launch(["bash", "-c", command_line(hook)], cwd=cwd, env=env))
                proc = await _spawned(asyncio.create_subprocess_exec(
                    *launch.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, cwd=cwd, env=dict(launch.env), start_new_session=True,
                    pass_fds=launch.pass_fds))
            else:
                proc = await _spawned(asyncio.create_subprocess_shell(
                    command_line(hook), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, cwd=cwd, env=dict(env), start_new_session=True,
                    executable=shutil.which("bash") or None))
        except OSError as error:
            return RawRun(None, failure=f"could not start: {error}", duration_ms=elapsed())
        return await _supervise(hook, proc, payload, cancel, elapsed)


async def _spawned(spawn: Coroutine[Any, Any, asyncio.subprocess.Process]) -> asyncio.subprocess.Process:
    """The started process, even when the caller is cancelled while it starts.

    The command runs before asyncio has finished wiring its pipes; a cancel (an abort) in
    that window would otherwise leave the group running, and asyncio's own clean-up of the
    half-made process waits for pipes that a child of the hook (``sleep 600``) holds open:
    the abort would wait for the hook to end by itself. So the start is finished, and then
    the whole group killed and reaped, before the cancel goes on."""
    starting = asyncio.ensure_future(spawn)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            proc = await starting
            _kill_group(proc)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.communicate(), 5)
        raise


async def _supervise(hook: HookCommand, proc: asyncio.subprocess.Process, payload: bytes,
                     cancel: CancelToken | None, elapsed: Callable[[], float]) -> RawRun:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdout: list[bytes] = []
    stderr: list[bytes] = []
    work = asyncio.ensure_future(asyncio.gather(
        _feed(proc.stdin, payload), _read(proc.stdout, stdout), _read(proc.stderr, stderr), proc.wait()))
    stop = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    timed_out = aborted = False
    try:
        waiting: set[asyncio.Future[Any]] = {work} if stop is None else {work, stop}
        done, _ = await asyncio.wait(waiting, timeout=hook.timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:
            aborted = stop is not None and stop in done
            timed_out = not aborted
            _kill_group(proc)
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
    finally:
        if stop is not None:
            stop.cancel()
        # A feed cut short leaves stdin open, and with it the process transport (which
        # would then be closed by the garbage collector, perhaps after its loop ended).
        with contextlib.suppress(Exception):
            proc.stdin.close()
        if not work.done():  # the caller was cancelled: leave nothing running
            _kill_group(proc)
            work.cancel()
            # Reaped before the caller goes on, so the transport closes on this loop.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(proc.wait(), 5)
    return RawRun(None if (timed_out or aborted) else proc.returncode, _text(stdout), _text(stderr),
                  timed_out=timed_out, aborted=aborted, duration_ms=elapsed())


async def _feed(stdin: asyncio.StreamWriter, payload: bytes) -> None:
    # A hook that never reads its input (or exits first) is fine.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(payload)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


async def _read(stream: asyncio.StreamReader, into: list[bytes]) -> None:
    """Keep the head of the output (enough for the cap) and drain the rest."""
    kept = 0
    while chunk := await stream.read(_READ_CHUNK):
        if kept < 4 * MAX_OUTPUT_CHARS:
            into.append(chunk)
            kept += len(chunk)


def _text(chunks: list[bytes]) -> str:
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n[... output cut at {MAX_OUTPUT_CHARS:,} characters]"
    return text


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)
