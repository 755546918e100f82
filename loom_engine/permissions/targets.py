"""What a tool call touches, as the permission manager sees it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileAccess:
    """The call reads (``write=False``) or writes the given paths, as the model wrote them."""

    paths: tuple[str, ...]
    write: bool


@dataclass(frozen=True)
class CommandRun:
    """The call runs a shell command from ``cwd`` (absolute)."""

    command: str
    cwd: str


@dataclass(frozen=True)
class UrlFetch:
    """The call fetches ``url`` from the network."""

    url: str


@dataclass(frozen=True)
class McpCall:
    """The call runs ``tool`` on the MCP server ``server``; ``read_only`` when the server
    annotated the tool ``readOnlyHint: true`` (an unannotated tool counts as writing)."""

    server: str
    tool: str
    read_only: bool


PermissionTarget = FileAccess | CommandRun | UrlFetch | McpCall
