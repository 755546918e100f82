"""Commands in the editor's terminal: ``terminal/create`` … ``terminal/release``.

The :class:`~loom_engine.tools.io.CommandRunner` of a session whose client offers
terminals. What the editor is asked to run is the command line Loom built: after the
permission check, with the cwd trap and environment of every bash call, and wrapped by
the session's sandbox exactly as a command Loom starts itself (the editor runs Loom's
Landlock launcher, or ``bwrap`` behind the launcher that gives it the seccomp program
Loom would pass as a descriptor: ``Launch.portable_argv``). A command whose sandbox
needs a descriptor no launcher can give (the allow-list proxy's channel) is never given
to the editor: the bash tool starts that one itself (``can_pass_descriptors``).

The terminal's id goes to ``on_terminal`` as soon as it exists, so the session can put
``{"type": "terminal", "terminalId": ...}`` in the tool call's content and the editor
shows the command running; it is also in the result's ``display`` (``terminal_id``).
The editor is given the environment Loom sets for every bash call (the marker, the
pager and git settings, the sandbox's) on top of its own: not Loom's whole environment,
which holds the model provider's keys. Timeout and cancel kill the terminal; it is
released whatever happens. Processes the command left running are then looked for by
the marker every bash call carries, and stopped, as after a command Loom ran (they are
found when the editor runs on this machine, which an editor sharing Loom's files does).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from builtin_tools import _process_tree as tree
from loom_engine.execution import CancelToken
from loom_engine.tools.io import CommandOutcome, CommandSpec, Outcome

from .client_files import client_failure
from .sdk import (
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    RequestError,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

# What the editor keeps of a command's output (it drops the start beyond this); the
# bash tool then keeps the first and last 15,000 characters of it for the model.
OUTPUT_BYTE_LIMIT = 1_000_000
# How long a killed command's terminal has to report its exit before Loom stops waiting.
KILL_WAIT_S = 10.0

# (tool call id, terminal id), awaited before the command's exit is waited for.
TerminalStarted = Callable[[str, str], Awaitable[None]]


class EditorTerminals(Protocol):
    """The client's terminal methods, as the SDK's agent-side connection offers them."""

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[EnvVariable] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None) -> CreateTerminalResponse: ...

    async def terminal_output(self, session_id: str, terminal_id: str) -> TerminalOutputResponse: ...

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str) -> WaitForTerminalExitResponse: ...

    async def kill_terminal(self, session_id: str, terminal_id: str) -> KillTerminalResponse | None: ...

    async def release_terminal(self, session_id: str, terminal_id: str) -> ReleaseTerminalResponse | None: ...


class ClientTerminalRunner:
    """Runs bash commands of one ACP session in its client's terminals."""

    def __init__(self, client: EditorTerminals, session_id: str, *, on_terminal: TerminalStarted | None = None,
                 output_byte_limit: int = OUTPUT_BYTE_LIMIT) -> None:
        self._client = client
        self._session_id = session_id
        self._on_terminal = on_terminal
        self._limit = output_byte_limit

    def can_pass_descriptors(self) -> bool:
        return False  # the editor starts the process: nothing of Loom's reaches it

    async def run(self, spec: CommandSpec, *, output: Callable[[str], None], timeout: float,
                  cancel: CancelToken) -> CommandOutcome:
        if spec.pass_fds:  # the bash tool never asks; refusing here keeps it so
            raise RuntimeError("a command that inherits descriptors cannot run in the editor's terminal")
        creating = asyncio.ensure_future(self._client.create_terminal(
            self._session_id, spec.argv[0], list(spec.argv[1:]),
            [EnvVariable(name=name, value=value) for name, value in _added_environment(spec.env).items()],
            str(spec.cwd), self._limit))
        try:
            created = await asyncio.shield(creating)
        except (RequestError, ConnectionError) as error:
            raise client_failure("start the command in a terminal", error) from None
        except asyncio.CancelledError:
            # Cancelled while the editor was starting it: it runs, so end it once known.
            with contextlib.suppress(RequestError, ConnectionError):
                await self._release((await creating).terminal_id, kill=True)
            raise
        terminal = created.terminal_id
        ended = False  # its exit was seen: nothing to kill at the release
        try:
            if self._on_terminal is not None:
                await self._on_terminal(spec.call_id, terminal)
            how, status = await self._wait(terminal, timeout, cancel)
            ended = status is not None
            shown = await self._client.terminal_output(self._session_id, terminal)
        except (RequestError, ConnectionError) as error:
            raise client_failure("run the command", error) from None
        finally:
            await self._release(terminal, kill=not ended)
        if shown.truncated:
            output(f"[the editor kept only the last {self._limit:,} bytes of the output]\n")
        output(shown.output)
        stopped = self._stop_leftovers(spec)
        return CommandOutcome(how, _exit_code(status), stopped and how == "exited", terminal_id=terminal)

    async def _wait(self, terminal: str, timeout: float,
                    cancel: CancelToken) -> tuple[Outcome, WaitForTerminalExitResponse | None]:
        exited = asyncio.ensure_future(self._client.wait_for_terminal_exit(self._session_id, terminal))
        aborted = asyncio.ensure_future(cancel.wait())
        try:
            done, _ = await asyncio.wait({exited, aborted}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if exited in done:
                return "exited", exited.result()
            await self._client.kill_terminal(self._session_id, terminal)
            with contextlib.suppress(asyncio.TimeoutError):
                return ("aborted" if aborted in done else "timeout"), await asyncio.wait_for(exited, KILL_WAIT_S)
            return ("aborted" if aborted in done else "timeout"), None
        finally:
            aborted.cancel()
            exited.cancel()

    async def _release(self, terminal: str, *, kill: bool) -> None:
        """Kill (when it may still run) and release ``terminal``, even while being cancelled."""
        release = asyncio.ensure_future(self._release_now(terminal, kill))
        try:
            await asyncio.shield(release)
        except asyncio.CancelledError:
            await release  # finish the clean-up, then let the cancel through
            raise

    async def _release_now(self, terminal: str, kill: bool) -> None:
        if kill:
            with contextlib.suppress(RequestError, ConnectionError):
                await self._client.kill_terminal(self._session_id, terminal)
        with contextlib.suppress(RequestError, ConnectionError):
            await self._client.release_terminal(self._session_id, terminal)

    @staticmethod
    def _stop_leftovers(spec: CommandSpec) -> bool:
        left = tree.find_processes(None, spec.marker)
        if not left:
            return False
        tree.signal_all(left, signal.SIGKILL)
        tree.reap_adopted(left)
        return not spec.contained


def _added_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What Loom sets for the command beyond its own environment, which came from the
    editor that started it (plus the agent settings': Loom's own keys, which a command
    needs no more than the editor's protocol log should show them)."""
    return {name: value for name, value in env.items() if os.environ.get(name) != value}


def _exit_code(status: WaitForTerminalExitResponse | None) -> int | None:
    """The exit code, or minus the signal that ended it (as asyncio reports a child's)."""
    if status is None:
        return None
    if status.exit_code is not None:
        return status.exit_code
    if status.signal:
        name = status.signal if status.signal.startswith("SIG") else f"SIG{status.signal}"
        with contextlib.suppress(KeyError):
            return -signal.Signals[name]
    return None
