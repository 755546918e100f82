"""The MCP servers of one Loom process: connected in the background, one task each.

    manager = McpManager(config.servers)
    manager.start()                      # on the running loop; returns at once
    await manager.wait_ready(3.0)        # optional: the servers that make it in time
    manager.statuses()                   # for /mcp and the status bar
    result = await manager.call_tool("everything", "echo", {"message": "hi"})
    await manager.aclose()

The ``mcp`` package costs most of a second to import, so it is imported only by the
first connecting task, in a thread: a Loom without servers never imports it, and a UI
loop never blocks on it. Each server's task holds its ``mcp.Client`` open until the
manager closes or the connection drops; a dropped connection is restarted once
(:meth:`reconnect` starts afresh). ``version`` grows whenever the set of tools changes
(a server connected, dropped, or sent ``notifications/tools/list_changed``): the agent
reads it at a turn boundary, so the tools block changes between requests, never within.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import ServerConfig
from .connection import ServerConnection, offered_tools, one_line_reason
from .status import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_CONNECT_TIMEOUT_S,
    McpCallError,
    McpPromptArgument,
    McpPromptInfo,
    McpResourceInfo,
    McpToolInfo,
    ServerState,
    ServerStatus,
)

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, GetPromptResult, ReadResourceResult

    from .oauth import LoginPrompt

__all__ = ["DEFAULT_CALL_TIMEOUT_S", "DEFAULT_CONNECT_TIMEOUT_S", "McpCallError", "McpManager",
           "McpPromptArgument", "McpPromptInfo", "McpResourceInfo", "McpToolInfo", "ServerState",
           "ServerStatus"]


class McpManager:
    """Every configured server's connection; see the module's doc for the lifecycle."""

    def __init__(self, servers: Sequence[ServerConfig], *, call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 disabled: Sequence[str] = (), auth_dir: Path | None = None) -> None:
        self.call_timeout_s = call_timeout_s
        # Where OAuth tokens are kept (the user data dir); None: no OAuth.
        self.auth_dir = auth_dir
        self.connect_timeout_s = connect_timeout_s
        self._disabled = set(disabled)
        self.version = 0  # grows whenever the tools on offer change
        self._listeners: list[Callable[[ServerStatus], None]] = []
        self._servers = {s.name: ServerConnection(self, s) for s in sorted(servers, key=lambda s: s.name)}
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start connecting every enabled server; call on the running loop, returns at once."""
        if self._started:
            return
        self._started = True
        for server in self._servers.values():
            if server.status.state != "disabled":
                server.start()

    async def wait_ready(self, timeout_s: float) -> None:
        """Wait until every server connected or failed, or ``timeout_s`` passed (a slow
        server keeps connecting; its tools join a later turn)."""
        waits = [s.ready.wait() for s in self._servers.values() if s.task is not None]
        if not waits:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await asyncio.gather(*waits)

    def add(self, config: ServerConfig) -> None:
        """Add a server after the start (a project server the user just approved); it
        connects at once when the manager has started. Replaces one of the same name."""
        old = self._servers.get(config.name)
        if old is not None and old.task is not None:
            old.task.cancel()
        server = ServerConnection(self, config)
        self._servers = dict(sorted({**self._servers, config.name: server}.items()))
        self.version += 1
        if self._started and server.status.state != "disabled":
            server.start()

    def names(self) -> tuple[str, ...]:
        return tuple(self._servers)

    async def reconnect(self, name: str) -> None:
        """Connect a server afresh (after a failure, or to pick up changes)."""
        server = self._get(name)
        await server.stop()
        server.restarts_left = 1
        self._disabled.discard(name)
        server.start()

    async def login(self, name: str, prompt: LoginPrompt) -> ServerStatus:
        """Log in to an HTTP/SSE server with OAuth: ``prompt`` gets the authorization URL
        (open it in a browser or show it); returns the server's status once connected or
        failed. Tokens are kept for later sessions (see :mod:`.oauth`)."""
        from .oauth import CallbackListener, login_auth

        server = self._get(name)
        storage = server.storage()
        if storage is None:
            raise McpCallError(f"{name} is not an HTTP server with OAuth")
        await server.stop()
        async with CallbackListener() as listener:
            server.login_auth = login_auth(server.config, storage, listener, prompt)
            try:
                server.restarts_left = 1
                self._disabled.discard(name)
                server.start()
                await server.ready.wait()
            finally:
                server.login_auth = None
        return server.status

    async def logout(self, name: str) -> None:
        """Forget the server's tokens and connect again (it will need a login)."""
        server = self._get(name)
        storage = server.storage()
        if storage is not None:
            storage.logout()
        await self.reconnect(name)

    async def disable(self, name: str) -> None:
        """Stop a server for this session: its tools leave at the next turn."""
        server = self._get(name)
        self._disabled.add(name)
        await server.stop()
        server.set(state="disabled", reason="", tools=(), prompts=(), resources=())

    async def aclose(self) -> None:
        await asyncio.gather(*(s.stop() for s in self._servers.values()), return_exceptions=True)

    # -- what there is --------------------------------------------------------------------

    def is_disabled(self, name: str) -> bool:
        return name in self._disabled

    def subscribe(self, listener: Callable[[ServerStatus], None]) -> Callable[[], None]:
        """Call ``listener`` with a server's status whenever it changes (on the loop that
        runs the servers); returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, status: ServerStatus) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(status)

    def statuses(self) -> tuple[ServerStatus, ...]:
        return tuple(s.status for s in self._servers.values())

    def status(self, name: str) -> ServerStatus:
        return self._get(name).status

    def tools(self) -> tuple[McpToolInfo, ...]:
        """The tools of the connected servers, by server then tool name."""
        return tuple(t for s in self._servers.values() for t in offered_tools(s.status))

    def prompts(self) -> tuple[McpPromptInfo, ...]:
        return tuple(p for s in self._servers.values() if s.status.state == "connected" for p in s.status.prompts)

    def resources(self) -> tuple[McpResourceInfo, ...]:
        return tuple(r for s in self._servers.values() if s.status.state == "connected"
                     for r in s.status.resources)

    def _get(self, name: str) -> ServerConnection:
        server = self._servers.get(name)
        if server is None:
            raise McpCallError(f"no MCP server named {name!r}")
        return server

    # -- requests -------------------------------------------------------------------------

    async def _connected(self, name: str) -> tuple[ServerConnection, Client]:
        server = self._get(name)
        if server.client is None and server.task is not None and not server.task.done():
            # Connecting (or restarting after an exit): give it its connect time.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.connect_timeout_s):
                    while server.client is None and server.task is not None and not server.task.done():
                        await asyncio.sleep(0.05)
        if server.client is None:
            reason = f": {server.status.reason}" if server.status.reason else ""
            raise McpCallError(f"MCP server {name!r} is {server.status.state}{reason}")
        return server, server.client

    async def call_tool(self, server_name: str, tool: str, arguments: Mapping[str, Any], *,
                        timeout_s: float | None = None) -> CallToolResult:
        """Call a tool; McpCallError when no result came (the caller turns it into an error
        result). Cancelling the awaiting task cancels the request on the server."""
        server, client = await self._connected(server_name)
        limit = timeout_s or server.config.timeout_s or self.call_timeout_s
        try:
            async with asyncio.timeout(limit):
                return await client.call_tool(tool, dict(arguments))
        except TimeoutError:
            raise McpCallError(f"{server_name} did not answer within {limit:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if _is_connection_lost(error):
                server.lost.set()  # its task restarts it once
                raise McpCallError(f"the MCP server {server_name!r} exited during the call "
                                   f"({one_line_reason(error)}); it is being restarted") from None
            raise McpCallError(f"{server_name}: {one_line_reason(error)}") from None

    async def get_prompt(self, server_name: str, prompt: str,
                         arguments: Mapping[str, str] | None = None) -> GetPromptResult:
        _server, client = await self._connected(server_name)
        async with asyncio.timeout(self.call_timeout_s):
            return await client.get_prompt(prompt, dict(arguments or {}))

    async def read_resource(self, server_name: str, uri: str) -> ReadResourceResult:
        _server, client = await self._connected(server_name)
        async with asyncio.timeout(self.call_timeout_s):
            return await client.read_resource(uri)


def _is_connection_lost(error: BaseException) -> bool:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    from mcp.shared.exceptions import MCPError

    if isinstance(error, MCPError):
        code = error.error.code
        text = error.error.message.lower()
        return code == -32000 or "closed" in text or "connection" in text
    import anyio

    return isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                              ConnectionError, EOFError))
