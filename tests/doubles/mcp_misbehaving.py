"""A small real MCP server (the official SDK's MCPServer, stdio) that misbehaves on cue.

Tools: ``crash`` exits the process mid-call; ``hang`` never answers (it writes
``$MCP_DOUBLE_MARK`` first, so a test knows the call arrived); ``grow`` adds a tool
named ``extra`` and announces the new list; ``peek`` is annotated read-only; ``poke``
has no annotations.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("misbehaving")


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    mark = os.environ.get("MCP_DOUBLE_MARK")
    if mark:
        Path(mark).write_text("called")
    await asyncio.sleep(3600)
    return "never"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek() -> str:
    """Look without changing anything."""
    return "peeked"


@server.tool()
def poke(value: str = "") -> str:
    """Change something."""
    return f"poked {value}"


def extra() -> str:
    """A tool that arrives later."""
    return "extra here"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `extra` and tell the client."""
    server.add_tool(extra)
    await ctx.notify_tools_changed()
    return "grown"


if __name__ == "__main__":
    server.run()
