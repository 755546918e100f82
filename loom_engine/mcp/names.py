"""How Loom names what an MCP server offers: ``mcp__<server>__<tool>``, the one place
the rule is written.

A server's tools (and its prompts, as ``/mcp__<server>__<prompt>`` commands) are named
with the prefix ``mcp__``, the server's name, ``__`` and the tool's name, each name
cleaned: characters outside ``[A-Za-z0-9_-]`` become ``_``. A name longer than 64
characters (what model APIs accept) is cut and ends in a short hash of the two names,
so it stays unique. Permission rules name every tool of a server as ``mcp__<server>``
or ``mcp__<server>__*``, in any case.

Imports nothing of Loom's and nothing heavy: the chat, the permission checks and the
sub-agents read it without loading the MCP client.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LENGTH = 8


def clean(text: str) -> str:
    """``text`` as it appears in a tool name: characters outside ``[A-Za-z0-9_-]`` as ``_``."""
    return _UNSAFE.sub("_", text)


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, cleaned, at most 64 characters."""
    name = f"{server_prefix(server)}{clean(tool)}"
    if len(name) <= MAX_LENGTH:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_LENGTH]
    return f"{name[:MAX_LENGTH - _HASH_LENGTH - 1]}_{digest}"


def server_prefix(server: str) -> str:
    """What every tool name of ``server`` starts with: ``mcp__<server>__``."""
    return f"{PREFIX}{clean(server)}{SEPARATOR}"


def is_mcp_name(name: str) -> bool:
    """Whether ``name`` is spelled as an MCP server's tool or prompt is (``mcp__…``)."""
    return name.startswith(PREFIX)


def is_prompt_command(text: str) -> bool:
    """Whether a typed line calls an MCP server's prompt (``/mcp__…``)."""
    return text.startswith("/") and is_mcp_name(text[1:])


def belongs_to(name: str, servers: tuple[str, ...]) -> bool:
    """Whether the tool ``name`` is one of these servers' (as they are configured)."""
    return name.startswith(tuple(server_prefix(server) for server in servers))


def server_rule_names(server: str) -> frozenset[str]:
    """The rule names that stand for every tool of ``server``, lower case (rules name
    tools in any case): ``mcp__<server>`` and ``mcp__<server>__*``."""
    base = f"{PREFIX}{clean(server)}".lower()
    return frozenset({base, f"{base}{SEPARATOR}*"})
