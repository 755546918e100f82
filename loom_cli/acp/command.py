"""`loom acp`: serve one ACP client on standard input and output until it goes away."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ..bootstrap import RunOptions


def serve(template: RunOptions) -> int:
    """``template``: the flags, applied to every session (its cwd and MCP servers are the
    client's). Standard output carries the protocol and nothing else: a stray print, or a
    process Loom starts, writes to standard error instead."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    try:
        asyncio.run(_serve(template, protocol_out))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(template: RunOptions, protocol_out: TextIO) -> None:
    from .sdk import serve_stdio
    from .server import LoomAcpAgent

    agent = LoomAcpAgent(template)
    try:
        await serve_stdio(agent, protocol_out)
    finally:
        await agent.close()
