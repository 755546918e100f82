"""An editor's session: a Loom agent built as `loom run` builds one, for the client's
working directory, with the MCP servers the client passes added as the user's own."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .sdk import AcpMcpServer, ClientCapabilities, HttpMcpServer, McpServer, McpServerStdio, SseMcpServer

if TYPE_CHECKING:
    from loom_engine.agent import Agent
    from loom_engine.events import PermissionRequested

    from ..bootstrap import Built, RunOptions


@dataclass
class AcpSession:
    """One ``session/new`` or ``session/load``: its agent and what the prompts need."""

    built: Built
    # What the client said it can do (``initialize``'s clientCapabilities): fs/read_text_file,
    # fs/write_text_file, terminal: what the server routes through the client (client_io).
    client_capabilities: ClientCapabilities
    # Said once, in the first reply: what the project adds that was left out (not trusted).
    notice: str | None = None
    # bypass is offered as a mode only when `loom acp --permission-mode bypass` asked for it
    # by name (the chat's Shift+Tab rule).
    bypass_allowed: bool = False
    # A prompt is being answered (from its request on, before the engine's run starts),
    # and whether session/cancel came before the run did.
    busy: bool = False
    cancelled_early: bool = False
    asks: set[asyncio.Task[None]] = field(default_factory=set)
    # Sending the session's commands, just after the response that gives the client its id.
    offer: asyncio.Task[None] | None = None
    # The question each open ``session/request_permission`` answers, by the engine's id.
    open_questions: dict[str, PermissionRequested] = field(default_factory=dict)

    @property
    def agent(self) -> Agent:
        return self.built.agent

    @property
    def id(self) -> str:
        return self.built.session.id


def build_session(template: RunOptions, cwd: Path, servers: Sequence[McpServer], *,
                  resume_id: str | None = None) -> tuple[Built, list[str]]:
    """The agent for ``cwd`` (the workspace), continuing ``resume_id`` when given, and the
    lines saying which of the client's servers Loom could not take. Blocking: call it in
    a worker thread."""
    from ..bootstrap import build_agent

    if resume_id is not None:
        _check_workspace(resume_id, cwd)
    folder = Path(tempfile.mkdtemp(prefix="loom-acp-"))  # private (0700): the entries may hold tokens
    try:
        entries, refused = client_servers(servers)
        extra: tuple[Path, ...] = ()
        if entries:
            config = folder / "mcp.json"
            fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"mcpServers": entries}, out)
            extra = (config,)
        # The client's servers are the user's own (the editor is the user's choice), read
        # as --mcp-config files are: never a project's.
        options = replace(template, cwd=cwd, resume_id=resume_id, mcp_config=(*template.mcp_config, *extra))
        built = build_agent(options, interactive=False, answers_permissions=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return built, refused


def _check_workspace(session_id: str, cwd: Path) -> None:
    """A session continues only in its own workspace (its files and rules are that folder's)."""
    from loom_engine.paths import sessions_dir
    from loom_engine.sessions.store import SessionError, SessionStore
    from loom_engine.workspace import find_workspace_root

    from ..settings import ConfigError

    try:
        info = SessionStore(sessions_dir()).load(session_id).info
    except SessionError as error:
        raise ConfigError(f"cannot load the session: {error}") from None
    root = find_workspace_root(cwd)
    if Path(info.workspace) != root:
        raise ConfigError(f"session {session_id} belongs to {info.workspace}, not {root}")


def client_servers(servers: Sequence[McpServer]) -> tuple[dict[str, dict[str, object]], list[str]]:
    """The client's MCP servers as ``.mcp.json`` entries, and a line for each left out."""
    entries: dict[str, dict[str, object]] = {}
    refused: list[str] = []
    for server in servers:
        if isinstance(server, McpServerStdio):
            entries[server.name] = {"command": server.command, "args": list(server.args),
                                    "env": {variable.name: variable.value for variable in server.env}}
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            entries[server.name] = {"type": server.type, "url": server.url,
                                    "headers": {header.name: header.value for header in server.headers}}
        elif isinstance(server, AcpMcpServer):
            refused.append(f"MCP server {server.name!r}: Loom does not take MCP over ACP; left out")
    return entries, refused


def untrusted_notice(built: Built) -> str | None:
    """One line naming what the project would add and was left out because the project is
    not trusted (as `loom run` says on stderr); None when nothing was."""
    from ..project_trust import ignored_line

    parts: list[str] = []
    if built.ignored:
        parts.append(f"project settings ({ignored_line(built.ignored)})")
    if built.hook_plan is not None and built.hook_plan.untrusted:
        count = len(built.hook_plan.untrusted)
        parts.append(f"{count} project hook{'' if count == 1 else 's'}")
    if built.mcp_plan is not None and built.mcp_plan.pending:
        names = ", ".join(server.name for server in built.mcp_plan.pending)
        parts.append(f"project MCP server{'' if len(built.mcp_plan.pending) == 1 else 's'} {names}")
    if not parts:
        return None
    return ("Loom: this project is not trusted, so it left out " + "; ".join(parts)
            + " (trust it by opening `loom` here, or start `loom acp --trust-project --trust-project-hooks "
              "--trust-project-mcp`).")
