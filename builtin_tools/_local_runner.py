"""Loom's own way to run a bash command: a child process in its own session.

The default :class:`~loom_engine.tools.io.CommandRunner` of the bash tool (the module
docstring of ``bash`` says what it guarantees). The command's stdout and stderr share
one pipe Loom owns; timeout and abort end the whole group, SIGTERM first and SIGKILL
for what is left, and so does the end of the command; what left the group is found by
the marker in its environment (``_process_tree``).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

from loom_engine.execution import CancelToken
from loom_engine.tools.io import CommandOutcome, CommandSpec, Outcome

from . import _process_tree as tree

# How long the group has to exit after SIGTERM before SIGKILL.
TERM_GRACE_S = 2.0
# How long to keep reading after the group is gone, for output still in the pipe (a
# process that left the group with setsid may hold it open forever).
DRAIN_GRACE_S = 2.0


class LocalCommandRunner:
    """Starts the command as Loom's child, with the descriptors the sandbox passes it."""

    def can_pass_descriptors(self) -> bool:
        return True

    async def run(self, spec: CommandSpec, *, output: Callable[[str], None], timeout: float,
                  cancel: CancelToken) -> CommandOutcome:
        read_fd, write_fd = os.pipe()
        pipe = os.fdopen(read_fd, "rb", 0)
        try:
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                cwd=os.fspath(spec.cwd), env=dict(spec.env),
                stdin=asyncio.subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
                start_new_session=True, pass_fds=spec.pass_fds,
            )
        except BaseException:
            pipe.close()
            raise
        finally:
            os.close(write_fd)  # the child has its copy; ours would hide EOF
        how, stopped = await _supervise(proc, pipe, output, timeout, cancel, spec.marker, spec.contained)
        return CommandOutcome(how, proc.returncode, stopped)


async def _supervise(
    proc: asyncio.subprocess.Process, pipe: Any, output: Callable[[str], None],
    timeout: float, cancel: CancelToken, marker: str, contained: bool = False,
) -> tuple[Outcome, bool]:
    """Wait for exit, timeout or abort; then make sure the group and the marked are gone.

    ``contained``: the command ran in a PID namespace that ends with it (the kernel kills
    whatever is left when its first process exits), so what is found after a normal exit
    is already dying and is not reported as stopped. It is still looked for and waited
    out: bubblewrap's outer process exits as soon as the command does, before the kernel
    has finished ending the namespace."""
    pgid = proc.pid  # start_new_session: the shell leads its own group
    pump: asyncio.Future[None] | None = None
    exited = asyncio.ensure_future(proc.wait())
    aborted = asyncio.ensure_future(cancel.wait())
    transport: asyncio.BaseTransport | None = None
    cleaned = False  # everything the command started is known to be gone
    try:
        reader = asyncio.StreamReader(limit=1 << 20)
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe)
        pump = asyncio.ensure_future(_pump(reader, output))
        done, _ = await asyncio.wait({exited, aborted}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        outcome: Outcome
        if exited in done:
            outcome = "exited"
        elif aborted in done:
            outcome = "aborted"
        else:
            outcome = "timeout"
        left = tree.find_processes(pgid, marker)
        stopped = outcome == "exited" and bool(left) and not contained
        await _terminate(pgid, marker, exited, left)
        cleaned = True
        # Output written before the group ended is still in the pipe.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(pump), DRAIN_GRACE_S)
        return outcome, stopped
    except asyncio.CancelledError:
        # Cancelled from outside: still give the group its SIGTERM grace unless
        # cancelled again, in which case the SIGKILL below does the job.
        with contextlib.suppress(asyncio.CancelledError):
            await _terminate(pgid, marker, exited)
        raise
    finally:
        _kill_group(pgid, signal.SIGKILL)  # whatever is left, whatever happened
        if not cleaned:
            tree.signal_all(tree.find_processes(None, marker), signal.SIGKILL)
        for task in (pump, exited, aborted):
            if task is not None:
                task.cancel()
        if transport is not None:
            transport.close()
        else:
            pipe.close()


async def _terminate(pgid: int, marker: str, exited: asyncio.Future[int],
                     left: list[int] | None = None) -> None:
    """SIGTERM, a grace period, SIGKILL: for the group and every marked process.

    Looked for again after each round, since a process may fork while it is dying.
    """
    loop = asyncio.get_running_loop()
    for _ in range(3):
        left = tree.find_processes(pgid, marker) if left is None else left
        if not left and exited.done():
            return
        _kill_group(pgid, signal.SIGTERM)
        tree.signal_all(left, signal.SIGTERM)
        deadline = loop.time() + TERM_GRACE_S
        while any(tree.is_alive(pid) for pid in left) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        _kill_group(pgid, signal.SIGKILL)
        tree.signal_all(left, signal.SIGKILL)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), TERM_GRACE_S)
        tree.reap_adopted(left, keep=pgid)  # asyncio waits for the shell itself
        left = None  # look again: something may have forked while dying
    tree.signal_all(tree.find_processes(pgid, marker), signal.SIGKILL)  # still forking: no more grace


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _pump(reader: asyncio.StreamReader, output: Callable[[str], None]) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await reader.read(65536):
        output(decoder.decode(chunk))
    output(decoder.decode(b"", final=True))
