"""What the MCP manager reports: each server's state and what it offers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .config import ServerConfig

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
