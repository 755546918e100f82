"""One MCP server's connection, held open by one task (see :mod:`.manager`)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any

from ..providers.names import OWN_ENV_PREFIXES
from .config import ServerConfig
from .status import McpPromptArgument, McpPromptInfo, McpResourceInfo, McpToolInfo, ServerState, ServerStatus

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider

    from .manager import McpManager
    from .oauth import FileTokenStorage

def _import_mcp() -> None:
    # The SDK logs its errors (an OAuth flow stopped for a login, say); with no handler
    # Python would print them on stderr, over the chat's screen. Loom reports them itself.
    logger = logging.getLogger("mcp")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    importlib.import_module("mcp")
    importlib.import_module("mcp.client.stdio")


class ServerConnection:
    """One server's connection, owned by one task (the SDK's client must be entered and
    left in the same task)."""

    def __init__(self, manager: McpManager, config: ServerConfig) -> None:
        self.manager = manager
        self.status = ServerStatus(config, "disabled" if manager.is_disabled(config.name) else "connecting")
        self.client: Client | None = None
        self.http: httpx2.AsyncClient | None = None
        self.errlog: IO[str] | None = None
        # Set while the user logs in (the flow waits for the browser, past the connect time).
        self.login_auth: OAuthClientProvider | None = None
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
        if offered_tools(old) != offered_tools(self.status):
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
                from .oauth import LOGIN_TIMEOUT_S

                limit = LOGIN_TIMEOUT_S if self.login_auth is not None else self.manager.connect_timeout_s
                async with asyncio.timeout(limit):
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
                reason = one_line_reason(error)
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

    def storage(self) -> FileTokenStorage | None:
        from .oauth import FileTokenStorage, token_file

        if self.manager.auth_dir is None or self.config.transport == "stdio":
            return None
        return FileTokenStorage(token_file(self.manager.auth_dir, self.config))

    def _auth(self) -> OAuthClientProvider | None:
        if self.login_auth is not None:
            return self.login_auth
        storage = self.storage()
        if storage is None:
            return None
        from .oauth import background_auth

        return background_auth(self.config, storage)

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
            # The server gets the user's environment (it may need PATH, HOME, tokens the
            # user exported) without Loom's own credentials, plus what the entry sets
            # (which may pass one on by name: "env": {"KEY": "${OPENAI_API_KEY}"}).
            from mcp.client.stdio import stdio_client

            inherited = {k: v for k, v in os.environ.items() if not k.startswith(OWN_ENV_PREFIXES)}
            params = StdioServerParameters(command=config.command, args=list(config.args),
                                           env={**inherited, **config.env}, cwd=config.cwd)
            # The server's stderr must not reach the terminal (it would tear the chat's
            # screen): it goes to a file, whose last lines explain a failure.
            self.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            return Client(stdio_client(params, errlog=self.errlog), mode="auto", message_handler=handler)
        auth = self._auth()
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return Client(sse_client(config.url, headers=dict(config.headers), auth=auth), mode="auto",
                          message_handler=handler)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        # The transport does not close a client it was given: _serve closes it.
        self.http = create_mcp_http_client(headers=dict(config.headers), auth=auth)
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
                self.manager._notify(replace(self.status, reason=f"listing failed: {one_line_reason(error)}"))
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


def offered_tools(status: ServerStatus) -> tuple[McpToolInfo, ...]:
    """The tools the model is offered from a server: a server restarting after an exit
    keeps its tools (a call waits for it), so the tools block does not flap."""
    return status.tools if status.state in ("connected", "connecting") else ()


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _failed_state(error: BaseException) -> ServerState:
    from .oauth import LoginRequired

    leaf = _leaf(error)
    text = one_line_reason(leaf).lower()
    if isinstance(leaf, LoginRequired) or "401" in text or "unauthorized" in text:
        return "needs_login"
    return "failed"


def one_line_reason(error: BaseException) -> str:
    """One line for a failure (anyio wraps errors in groups: use the first leaf)."""
    from .oauth import LoginRequired

    error = _leaf(error)
    if isinstance(error, LoginRequired):
        return str(error)
    if isinstance(error, TimeoutError):
        return "did not answer in time"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
