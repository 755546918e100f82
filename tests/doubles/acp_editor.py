"""An editor on the client side of ACP, for tests of Loom's client-backed files and terminals.

``EditorDouble`` serves ``fs/*`` from in-memory buffers that override the disk (an
unsaved buffer is what a read returns; a write is recorded and saved, as an editor does) and
``terminal/*`` by really running the command as a subprocess, recording what it was
asked. ``editor_pair()`` connects it to an agent-side SDK connection over a socket pair
in this process, with the SDK's own connections on both ends.

    async with editor_pair(tmp_path) as (connection, editor):
        files = ClientFileAccess(connection, SESSION)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    CreateTerminalResponse,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestError,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
    connect_to_agent,
    run_agent,
)
from acp.interfaces import Client
from acp.schema import EnvVariable, TerminalExitStatus

SESSION = "session-1"


@dataclass
class TerminalRequest:
    """What the agent asked the editor to run."""

    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str | None
    output_byte_limit: int | None


@dataclass
class _Terminal:
    request: TerminalRequest
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None


class EditorDouble:
    """The client: buffers over the disk, and terminals that really run."""

    def __init__(self) -> None:
        self.buffers: dict[str, str] = {}  # path -> unsaved text
        self.failing: dict[str, str] = {}  # path -> why the editor refuses it
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: list[TerminalRequest] = []
        self.killed: list[str] = []
        self.released: list[str] = []
        self.terminal_started = asyncio.Event()
        self._running: dict[str, _Terminal] = {}

    # --- fs ---------------------------------------------------------------------------

    def _refuse(self, path: str) -> None:
        if path in self.failing:
            raise RequestError(-32603, "Internal error", {"details": self.failing[path]})

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self._refuse(path)
        text = self.buffers[path] if path in self.buffers else Path(path).read_text(encoding="utf-8")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = (line or 1) - 1
            text = "".join(lines[start:start + limit] if limit is not None else lines[start:])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **_: Any) -> WriteTextFileResponse | None:
        self._refuse(path)
        self.writes.append((path, content))
        self.buffers.pop(path, None)  # saved, as an editor does for fs/write_text_file
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(content, encoding="utf-8")
        return WriteTextFileResponse()

    # --- terminal ---------------------------------------------------------------------

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[EnvVariable] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None, **_: Any) -> CreateTerminalResponse:
        request = TerminalRequest(command, list(args or ()), {v.name: v.value for v in env or ()}, cwd,
                                  output_byte_limit)
        self.terminals.append(request)
        process = await asyncio.create_subprocess_exec(
            command, *request.args, cwd=cwd, env={**os.environ, **request.env},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)
        terminal_id = f"term-{len(self.terminals)}"
        running = _Terminal(request, process)
        running.reader = asyncio.ensure_future(self._read(running))
        self._running[terminal_id] = running
        self.terminal_started.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _read(self, terminal: _Terminal) -> None:
        assert terminal.process.stdout is not None
        limit = terminal.request.output_byte_limit
        while chunk := await terminal.process.stdout.read(65536):
            terminal.output += chunk
            if limit is not None and len(terminal.output) > limit:
                del terminal.output[:len(terminal.output) - limit]
                terminal.truncated = True

    def _terminal(self, terminal_id: str) -> _Terminal:
        if terminal_id not in self._running:
            raise RequestError.invalid_params({"details": f"no terminal {terminal_id}"})
        return self._running[terminal_id]

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        status = None
        if terminal.process.returncode is not None:
            if terminal.reader is not None:
                await terminal.reader
            status = TerminalExitStatus(**_status(terminal.process.returncode))
        return TerminalOutputResponse(output=terminal.output.decode("utf-8", "replace"),
                                      truncated=terminal.truncated, exit_status=status)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **_: Any) -> WaitForTerminalExitResponse:
        terminal = self._terminal(terminal_id)
        code = await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        return WaitForTerminalExitResponse(**_status(code))

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> KillTerminalResponse | None:
        self.killed.append(terminal_id)
        _kill(self._terminal(terminal_id))
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> ReleaseTerminalResponse | None:
        self.released.append(terminal_id)
        terminal = self._running.pop(terminal_id, None)
        if terminal is not None:
            _kill(terminal)
            await terminal.process.wait()
        return ReleaseTerminalResponse()

    async def close(self) -> None:
        for terminal_id in list(self._running):
            await self.release_terminal(SESSION, terminal_id)

    # --- what an agent's updates and questions need -------------------------------------

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")


def _status(code: int) -> dict[str, Any]:
    if code < 0:
        return {"exit_code": None, "signal": signal.Signals(-code).name}
    return {"exit_code": code, "signal": None}


def _kill(terminal: _Terminal) -> None:
    if terminal.process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(terminal.process.pid, signal.SIGKILL)


class _Agent:
    """The agent side's own handlers (none: these tests only send requests to the
    editor); it hands on the connection ``run_agent`` makes."""

    def __init__(self) -> None:
        self.connected: asyncio.Future[Client] = asyncio.get_running_loop().create_future()

    def on_connect(self, connection: Client) -> None:
        self.connected.set_result(connection)


@contextlib.asynccontextmanager
async def editor_pair() -> AsyncIterator[tuple[Client, EditorDouble]]:
    """The agent side's SDK connection to a client that is an :class:`EditorDouble`."""
    agent_end, editor_end = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_end)
    editor_reader, editor_writer = await asyncio.open_connection(sock=editor_end)
    editor = EditorDouble()
    editor_side = connect_to_agent(editor, editor_writer, editor_reader)  # type: ignore[arg-type]
    agent = _Agent()
    serving = asyncio.ensure_future(run_agent(agent, agent_writer, agent_reader))  # type: ignore[arg-type]
    try:
        yield await agent.connected, editor
    finally:
        await editor.close()
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        await editor_side.close()
        for writer in (agent_writer, editor_writer):
            writer.close()
