"""What a tool call touches, as the permission manager sees it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileAccess:
    """The call reads (``write=False``) or writes the given paths, as the model wrote them."""

    paths: tuple[str, ...]
    write: bool


@dataclass(frozen=True)
class Confinement:
    """The OS sandbox a command will run in: what it reaches beyond the workspace."""

    # "off", "allowlist" (named domains only) or "on" (the sandbox's network mode).
    network: str
    # The user lets accept-edits run such a command unasked (autoAllowBashIfSandboxed).
    auto_allow_in_accept_edits: bool = True


@dataclass(frozen=True)
class CommandRun:
    """The call runs a shell command from ``cwd`` (absolute).

    ``confinement``: the sandbox it runs in; None when it runs unconfined (no sandbox,
    or one that cannot start). ``escalation``: the model asked to run it outside the
    sandbox (``dangerously_disable_sandbox``), with its reason ("" for none given);
    None when it did not. Such a call always asks the user."""

    command: str
    cwd: str
    confinement: Confinement | None = None
    escalation: str | None = None


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
