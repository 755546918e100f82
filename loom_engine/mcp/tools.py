"""MCP servers' tools as Loom tools, and the two tools that reach the servers otherwise.

Each server tool becomes ``mcp__<server>__<tool>`` (the rule: :mod:`.names`);
:meth:`McpToolset.lookup` maps a Loom name back.
The server's JSON schema goes to the model as is; the server validates the arguments.

:class:`McpToolset` is the agent's :class:`~loom_engine.tools.source.ToolSource`: tools
sorted by server then name, so the tools block is byte-identical until a server joins,
leaves or changes its list. When the schemas together would take more than
``budget_fraction`` of the model's window, they are deferred: the model gets
``tool_search``, and the tools it looks up join the block from the next request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..execution import Cancelled
from ..permissions.targets import McpCall, PermissionTarget
from ..tools.base import BaseTool, Tool, ToolContext, ToolError, ToolOutput
from .manager import McpCallError, McpManager, McpToolInfo
from .names import tool_name
from .results import ResultLimits, call_result_output, resource_output


class _AnyArgs(BaseModel):
    """Whatever the model sent: the server checks it against its own schema."""

    model_config = ConfigDict(extra="allow")


async def _until_cancelled(work: Any, ctx: ToolContext) -> Any:
    """Await ``work``; an abort (the run's cancel token) cancels it, and with it the
    request on the server."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(ctx.cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise Cancelled(ctx.cancel.reason or "interrupted by user")
    return task.result()


class McpTool(BaseTool[_AnyArgs]):
    input_model = _AnyArgs

    def __init__(self, info: McpToolInfo, toolset: McpToolset) -> None:
        self.info = info
        self.toolset = toolset
        self.name = tool_name(info.server, info.name)
        self.description = info.description or f"{info.name} (from the MCP server {info.server})"
        self.json_schema: Mapping[str, Any] = info.input_schema or {"type": "object"}
        self.is_read_only = info.read_only
        self.is_concurrency_safe = info.read_only

    def permission_target(self, args: _AnyArgs, ctx: ToolContext) -> PermissionTarget | None:
        return McpCall(self.info.server, self.info.name, self.info.read_only)

    async def preview(self, args: _AnyArgs, ctx: ToolContext) -> Mapping[str, Any] | None:
        return {"kind": "mcp", "server": self.info.server, "tool": self.info.name,
                "arguments": json.dumps(args.model_dump(), indent=2, ensure_ascii=False)}

    async def run(self, args: _AnyArgs, ctx: ToolContext) -> ToolOutput:
        try:
            result = await _until_cancelled(
                self.toolset.manager.call_tool(self.info.server, self.info.name, args.model_dump()), ctx)
        except McpCallError as error:
            raise ToolError(str(error)) from None
        return call_result_output(result, self.toolset.limits(ctx), label=self.name)


class _ResourceArgs(BaseModel):
    server: str = Field(description="The MCP server's name.")
    uri: str = Field(description="The resource's URI, as the server lists it.")


class ReadMcpResourceTool(BaseTool[_ResourceArgs]):
    name = "read_mcp_resource"
    description = ("Read a resource from a connected MCP server by its URI. The servers' resources are "
                   "listed in this tool's description when there are any.")
    input_model = _ResourceArgs
    is_read_only = True
    is_concurrency_safe = True

    def __init__(self, toolset: McpToolset) -> None:
        self.toolset = toolset
        listed = [f"{r.server}: {r.uri}" + (f" ({r.name})" if r.name else "")
                  for r in toolset.manager.resources()[:50]]
        if listed:
            self.description += "\nResources:\n" + "\n".join(listed)

    async def run(self, args: _ResourceArgs, ctx: ToolContext) -> ToolOutput:
        try:
            result = await _until_cancelled(self.toolset.manager.read_resource(args.server, args.uri), ctx)
        except McpCallError as error:
            raise ToolError(str(error)) from None
        except (TimeoutError, Cancelled):
            raise
        except Exception as error:
            raise ToolError(f"reading {args.uri} from {args.server} failed: {error}") from None
        return resource_output(result, self.toolset.limits(ctx), label=f"{args.server}:{args.uri}")


class _SearchArgs(BaseModel):
    query: str = Field(description="Words to look for in the tools' names and descriptions, or exact "
                                   "tool names separated by spaces.")
    max_results: int = Field(default=5, ge=1, le=20)


class ToolSearchTool(BaseTool[_SearchArgs]):
    name = "tool_search"
    description = ("Find MCP tools whose schemas are not loaded yet and load them. Returns each tool's "
                   "name, description and full input schema; the tools can be called from the next step.")
    input_model = _SearchArgs
    is_read_only = True
    session_only = True

    def __init__(self, toolset: McpToolset) -> None:
        self.toolset = toolset
        names = [tool_name(t.server, t.name) for t in toolset.manager.tools()]
        self.description += "\nAvailable: " + ", ".join(names[:200])

    async def run(self, args: _SearchArgs, ctx: ToolContext) -> ToolOutput:
        found = self.toolset.search(args.query, args.max_results)
        if not found:
            return ToolOutput(f"No MCP tool matches {args.query!r}.")
        self.toolset.load(t.name for t in found)
        blocks = [json.dumps({"name": t.name, "description": t.description, "input_schema": t.json_schema},
                             indent=1, ensure_ascii=False) for t in found]
        return ToolOutput("Loaded (callable from the next step):\n" + "\n".join(blocks))


class McpToolset:
    """The agent's tool source for MCP (see the module's doc)."""

    def __init__(self, manager: McpManager, *, context_window: int | None = None,
                 budget_fraction: float = 0.10, max_output_tokens: int = 25_000,
                 spill_dir: Callable[[], Path | None] = lambda: None, startup_wait_s: float = 5.0) -> None:
        self.manager = manager
        self.startup_wait_s = startup_wait_s
        self._settled = False
        self.context_window = context_window
        self.budget_fraction = budget_fraction
        self.max_output_tokens = max_output_tokens
        self.spill_dir = spill_dir
        self._loaded: set[str] = set()
        self._own_version = 0
        self._built_at: int | None = None
        self._tools: tuple[Tool, ...] = ()
        self._mcp_tools: dict[str, McpTool] = {}
        self._deferring = False

    @property
    def version(self) -> int:
        return self.manager.version + self._own_version

    async def settle(self) -> None:
        """The first request waits up to ``startup_wait_s`` for servers still connecting
        (a slow one's tools join a later turn); later requests never wait."""
        if not self._settled:
            self._settled = True
            await self.manager.wait_ready(self.startup_wait_s)

    def limits(self, ctx: ToolContext) -> ResultLimits:
        return ResultLimits(self.max_output_tokens, self.spill_dir(), ctx.call_id)

    def _build(self) -> None:
        if self._built_at == self.manager.version:
            return
        self._built_at = self.manager.version
        mcp = sorted((McpTool(info, self) for info in self.manager.tools()), key=lambda t: t.name)
        self._mcp_tools = {}
        for tool in mcp:  # two names cleaned alike: the first (by server, tool) keeps it
            self._mcp_tools.setdefault(tool.name, tool)
        schema_tokens = sum(len(json.dumps(t.json_schema)) + len(t.description) for t in mcp) // 4
        self._deferring = bool(self.context_window) and \
            schema_tokens > self.budget_fraction * (self.context_window or 0)
        # Reading resources is offered once a server is configured (not for an empty manager).
        extra: list[Tool] = [ReadMcpResourceTool(self)] if self.manager.names() else []
        if self._deferring:
            extra.append(ToolSearchTool(self))
        self._tools = (*self._mcp_tools.values(), *sorted(extra, key=lambda t: t.name))

    def tools(self) -> Sequence[Tool]:
        self._build()
        return self._tools

    def sent_names(self) -> frozenset[str] | None:
        self._build()
        if not self._deferring:
            return None
        return frozenset({ReadMcpResourceTool.name, ToolSearchTool.name} | (self._loaded & set(self._mcp_tools)))

    def lookup(self, loom_name: str) -> McpToolInfo | None:
        """The server tool behind a Loom tool name (the reverse map)."""
        self._build()
        tool = self._mcp_tools.get(loom_name)
        return tool.info if tool is not None else None

    def search(self, query: str, limit: int) -> list[McpTool]:
        self._build()
        words = query.lower().split()
        exact = [self._mcp_tools[w] for w in query.split() if w in self._mcp_tools]
        if exact:
            return exact[:limit]
        scored = []
        for tool in self._mcp_tools.values():
            hay = f"{tool.name} {tool.description}".lower()
            score = sum(hay.count(w) for w in words)
            if score:
                scored.append((-score, tool.name, tool))
        return [t for _, _, t in sorted(scored)[:limit]]

    def load(self, names: Any) -> None:
        new = set(names) - self._loaded
        if new:
            self._loaded |= new
            self._own_version += 1
