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
import importlib
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING, Any, Literal

from .config import ServerConfig

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.types import CallToolResult, GetPromptResult, ReadResourceResult

ServerState = Literal["connecting", "connected", "failed", "needs_login", "disabled"]

DEFAULT_CALL_TIMEOUT_S = 600.0
DEFAULT_CONNECT_TIMEOUT_S = 30.0


class McpCallError(Exception):
    """A call that got no result: the server is not connected, timed out or exited."""


@dataclass(frozen=True)
class McpToolInfo:
    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool  # the server's annotations say readOnlyHint: true
    title: str | None = None


@dataclass(frozen=True)
class McpPromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class McpPromptInfo:
    server: str
    name: str
    description: str = ""
    arguments: tuple[McpPromptArgument, ...] = ()


@dataclass(frozen=True)
class McpResourceInfo:
    server: str
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None


@dataclass(frozen=True)
class ServerStatus:
    """What /mcp shows of one server."""

    config: ServerConfig
    state: ServerState
    reason: str = ""  # why it failed, or what it needs
    tools: tuple[McpToolInfo, ...] = ()
    prompts: tuple[McpPromptInfo, ...] = ()
    resources: tuple[McpResourceInfo, ...] = ()

    @property
    def name(self) -> str:
        return self.config.name


def _import_mcp() -> None:
    importlib.import_module("mcp")
    importlib.import_module("mcp.client.stdio")


class _Server:
    """One server's connection, owned by one task (the SDK's client must be entered and
    left in the same task)."""

    def __init__(self, manager: McpManager, config: ServerConfig) -> None:
        self.manager = manager
        self.status = ServerStatus(config, "disabled" if manager.is_disabled(config.name) else "connecting")
        self.client: Client | None = None
        self.http: httpx2.AsyncClient | None = None
        self.errlog: IO[str] | None = None
        self.task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # set once the first attempt ended, either way
        self.lost = asyncio.Event()
        self.restarts_left = 1

    @property
    def config(self) -> ServerConfig:
        return self.status.config

    def set(self, **changes: Any) -> None:
        old = self.status
        self.status = replace(old, **changes)
        if _offered(old) != _offered(self.status):
            self.manager.version += 1
        self.manager._notify(self.status)

    def start(self) -> None:
        self.ready.clear()
        self.lost.clear()
        self.set(state="connecting", reason="")
        self.task = asyncio.create_task(self._serve(), name=f"mcp:{self.config.name}")

    async def stop(self) -> None:
        task, self.task = self.task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self.client = None

    async def _serve(self) -> None:
        while True:
            try:
                await asyncio.to_thread(_import_mcp)
                client = self._client()
                async with asyncio.timeout(self.manager.connect_timeout_s):
                    await client.__aenter__()
                try:
                    self.client = client
                    await self.refresh(client, tools=True, prompts=True, resources=True)
                    self.set(state="connected", reason="")
                    self.ready.set()
                    listener = asyncio.create_task(self._listen(client))
                    try:
                        await self.lost.wait()
                    finally:
                        listener.cancel()
                        with contextlib.suppress(BaseException):
                            await listener
                finally:
                    self.client = None
                    with contextlib.suppress(Exception):
                        await client.__aexit__(None, None, None)
                    await self._close_http()
                    self._stderr_tail()  # closes the log file
            except asyncio.CancelledError:
                self._stderr_tail()
                raise
            except BaseException as error:
                await self._close_http()
                reason = _reason(error)
                said = self._stderr_tail()
                if said and "Connection closed" in reason:
                    reason = f"the server exited: {said}"
                elif said:
                    reason = f"{reason} (the server said: {said})"
                self.set(state=_failed_state(error), reason=reason, tools=(), prompts=(), resources=())
                self.ready.set()
                return
            self.lost.clear()
            if self.restarts_left <= 0:
                self.set(state="failed", reason="the server exited (restarted once already)", tools=(),
                         prompts=(), resources=())
                return
            self.restarts_left -= 1
            self.set(state="connecting", reason="restarting after the server exited")

    def _stderr_tail(self) -> str:
        """The last lines the server wrote to stderr, on one line ("" for none)."""
        log, self.errlog = self.errlog, None
        if log is None:
            return ""
        try:
            log.seek(0)
            lines = [line.strip() for line in log.read()[-4000:].splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        finally:
            log.close()
        return " | ".join(lines[-3:])[:300]

    async def _close_http(self) -> None:
        http, self.http = self.http, None
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()

    def _client(self) -> Client:
        from mcp import Client, StdioServerParameters

        config = self.config
        handler = self._on_message
        if config.transport == "stdio":
            # The server gets Loom's environment (it may need PATH, HOME, tokens the
            # user exported) plus what the entry sets.
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=config.command, args=list(config.args),
                                           env={**os.environ, **config.env}, cwd=config.cwd)
            # The server's stderr must not reach the terminal (it would tear the chat's
            # screen): it goes to a file, whose last lines explain a failure.
            self.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            return Client(stdio_client(params, errlog=self.errlog), mode="auto", message_handler=handler)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return Client(sse_client(config.url, headers=dict(config.headers)), mode="auto",
                          message_handler=handler)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        # The transport does not close a client it was given: _serve closes it.
        self.http = create_mcp_http_client(headers=dict(config.headers))
        return Client(streamable_http_client(config.url, http_client=self.http), mode="auto",
                      message_handler=handler)

    async def _listen(self, client: Client) -> None:
        """On a 2026-07-28 connection, list changes come on a ``subscriptions/listen``
        stream (older servers send them as notifications: :meth:`_on_message`)."""
        from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

        caps = client.server_capabilities
        tools = bool(caps.tools and caps.tools.list_changed)
        prompts = bool(caps.prompts and caps.prompts.list_changed)
        resources = bool(caps.resources and caps.resources.list_changed)
        if not (tools or prompts or resources):
            return
        try:
            async with client.listen(tools_list_changed=tools, prompts_list_changed=prompts,
                                     resources_list_changed=resources) as subscription:
                async for event in subscription:
                    await self.refresh(client, tools=isinstance(event, ToolsListChanged),
                                       prompts=isinstance(event, PromptsListChanged),
                                       resources=isinstance(event, ResourcesListChanged))
        except asyncio.CancelledError:
            raise
        except Exception:  # an older protocol (no listen) or the stream dropped: lists stay
            return

    async def _on_message(self, message: Any) -> None:
        from mcp.types import (
            PromptListChangedNotification,
            ResourceListChangedNotification,
            ToolListChangedNotification,
        )

        client = self.client
        if isinstance(message, Exception):
            return  # a transport hiccup; a dead connection shows in the next call
        if client is None:
            return
        # Refetch in a task of its own: the handler runs inside the session's reader.
        if isinstance(message, ToolListChangedNotification):
            asyncio.get_running_loop().create_task(self.refresh(client, tools=True))
        elif isinstance(message, PromptListChangedNotification):
            asyncio.get_running_loop().create_task(self.refresh(client, prompts=True))
        elif isinstance(message, ResourceListChangedNotification):
            asyncio.get_running_loop().create_task(self.refresh(client, resources=True))

    async def refresh(self, client: Client, *, tools: bool = False, prompts: bool = False,
                      resources: bool = False) -> None:
        caps = client.server_capabilities
        changes: dict[str, Any] = {}
        name = self.config.name
        try:
            if tools and caps.tools is not None:
                listed = await _all_pages(lambda cursor: client.list_tools(cursor=cursor, cache_mode="refresh"),
                                          "tools")
                changes["tools"] = tuple(sorted(
                    (McpToolInfo(name, t.name, t.description or "", dict(t.input_schema),
                                 bool(t.annotations and t.annotations.read_only_hint), t.title)
                     for t in listed if self.config.tool_enabled(t.name)), key=lambda t: t.name))
            if prompts and caps.prompts is not None:
                listed = await _all_pages(lambda cursor: client.list_prompts(cursor=cursor, cache_mode="refresh"),
                                          "prompts")
                changes["prompts"] = tuple(sorted(
                    (McpPromptInfo(name, p.name, p.description or "",
                                   tuple(McpPromptArgument(a.name, a.description or "", bool(a.required))
                                         for a in (p.arguments or ())))
                     for p in listed), key=lambda p: p.name))
            if resources and caps.resources is not None:
                listed = await _all_pages(
                    lambda cursor: client.list_resources(cursor=cursor, cache_mode="refresh"), "resources")
                changes["resources"] = tuple(
                    McpResourceInfo(name, str(r.uri), r.name, r.description or "", r.mime_type) for r in listed)
        except Exception as error:  # a listing the server fails: keep what we had
            if self.status.state == "connected":
                self.manager._notify(replace(self.status, reason=f"listing failed: {_reason(error)}"))
                return
            raise
        if changes:
            self.set(**changes)


async def _all_pages(fetch: Callable[[str | None], Any], field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _offered(status: ServerStatus) -> tuple[McpToolInfo, ...]:
    """The tools the model is offered from a server: a server restarting after an exit
    keeps its tools (a call waits for it), so the tools block does not flap."""
    return status.tools if status.state in ("connected", "connecting") else ()


def _failed_state(error: BaseException) -> ServerState:
    text = _reason(error).lower()
    return "needs_login" if "401" in text or "unauthorized" in text else "failed"


def _reason(error: BaseException) -> str:
    """One line for a failure (anyio wraps errors in groups: use the first leaf)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return "did not answer in time"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class McpManager:
    """Every configured server's connection; see the module's doc for the lifecycle."""

    def __init__(self, servers: Sequence[ServerConfig], *, call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 disabled: Sequence[str] = ()) -> None:
        self.call_timeout_s = call_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._disabled = set(disabled)
        self.version = 0  # grows whenever the tools on offer change
        self._listeners: list[Callable[[ServerStatus], None]] = []
        self._servers = {s.name: _Server(self, s) for s in sorted(servers, key=lambda s: s.name)}
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
        server = _Server(self, config)
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
        return tuple(t for s in self._servers.values() for t in _offered(s.status))

    def prompts(self) -> tuple[McpPromptInfo, ...]:
        return tuple(p for s in self._servers.values() if s.status.state == "connected" for p in s.status.prompts)

    def resources(self) -> tuple[McpResourceInfo, ...]:
        return tuple(r for s in self._servers.values() if s.status.state == "connected"
                     for r in s.status.resources)

    def _get(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            raise McpCallError(f"no MCP server named {name!r}")
        return server

    # -- requests -------------------------------------------------------------------------

    async def _connected(self, name: str) -> tuple[_Server, Client]:
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
                                   f"({_reason(error)}); it is being restarted") from None
            raise McpCallError(f"{server_name}: {_reason(error)}") from None

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
