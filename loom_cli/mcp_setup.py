"""Which configured MCP servers a Loom process connects, and the trust rule for them.

A repository's ``.mcp.json`` names commands that would run on the user's machine, so a
project server runs only once the user approved that exact entry (recorded by its hash
in :class:`~loom_cli.workspace_records.WorkspaceRecords`, outside the repository).
``--trust-project-mcp`` uses them for one run; ``--mcp-config FILE`` adds the servers of
a file the user named. The user's own ``mcp.json`` needs no approval, nor do the servers
`claude mcp add` wrote to their ``~/.claude.json`` (user and local scope).

Settings read from the environment, under Claude Code's names:
``MCP_TIMEOUT`` (ms the chat's first request waits for servers still connecting, default
5000; `loom run` waits for every server to connect or fail, up to the connect timeout,
30 s, or ``MCP_TIMEOUT`` when it is set), ``MCP_TOOL_TIMEOUT`` (ms per tool call, default 600000; a server's ``timeout``
wins), ``MAX_MCP_OUTPUT_TOKENS`` (default 25000).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from loom_engine.mcp.config import McpConfig, ServerConfig, load_mcp_config

from .workspace_records import WorkspaceRecords

if TYPE_CHECKING:
    from loom_engine.mcp.manager import McpManager

DEFAULT_STARTUP_WAIT_S = 5.0
DEFAULT_MAX_OUTPUT_TOKENS = 25_000


@dataclass(frozen=True)
class McpPlan:
    """What the configuration gives, split by trust."""

    config: McpConfig
    use: tuple[ServerConfig, ...] = ()  # connect these
    pending: tuple[ServerConfig, ...] = ()  # project servers not asked about yet (the TUI asks)
    refused: tuple[ServerConfig, ...] = ()  # project servers the user said no to
    notes: tuple[str, ...] = field(default=())  # config problems, one line each

    def skipped_lines(self) -> list[str]:
        """For stderr: each project server left out and why."""
        lines = [f"project MCP server {s.name!r} ({s.describe()}) not approved: skipped "
                 "(approve it in the chat, or --trust-project-mcp for this run)" for s in self.pending]
        lines += [f"project MCP server {s.name!r}: skipped (you refused it)" for s in self.refused]
        return lines


def plan_servers(workspace_root: Path, config_dir: Path, records: WorkspaceRecords, *,
                 extra_files: Sequence[Path] = (), trust_project: bool = False,
                 env: Mapping[str, str] | None = None, claude_file: Path | None = None) -> McpPlan:
    """``claude_file``: Claude Code's ``~/.claude.json`` (None: not read)."""
    config = load_mcp_config(workspace_root, config_dir, extra_files, env, claude_file=claude_file)
    use: list[ServerConfig] = []
    pending: list[ServerConfig] = []
    refused: list[ServerConfig] = []
    for server in config.servers:
        if server.scope != "project" or trust_project:
            use.append(server)
            continue
        decision = records.mcp_decision(workspace_root, server.entry_hash)
        (use if decision else pending if decision is None else refused).append(server)
    return McpPlan(config, tuple(use), tuple(pending), tuple(refused),
                   tuple(p.line() for p in config.problems))


def _env_ms(name: str, default_s: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default_s
    return value / 1000 if value > 0 else default_s


def startup_wait_s() -> float:
    return _env_ms("MCP_TIMEOUT", DEFAULT_STARTUP_WAIT_S)


def headless_wait_s() -> float | None:
    """How long `loom run` waits for its servers before the first request: ``MCP_TIMEOUT``
    when set; None: until each connected or failed (its connect timeout bounds that)."""
    return _env_ms("MCP_TIMEOUT", 0.0) or None


def max_output_tokens() -> int:
    try:
        value = int(os.environ.get("MAX_MCP_OUTPUT_TOKENS", ""))
    except ValueError:
        return DEFAULT_MAX_OUTPUT_TOKENS
    return value if value > 0 else DEFAULT_MAX_OUTPUT_TOKENS


def make_manager(plan: McpPlan) -> McpManager | None:
    """The manager for the servers to use, or None when there are none at all (then
    the ``mcp`` package is never imported)."""
    if not plan.config.servers:
        return None
    from loom_engine.mcp.manager import DEFAULT_CALL_TIMEOUT_S, McpManager
    from loom_engine.paths import data_dir

    return McpManager(plan.use, call_timeout_s=_env_ms("MCP_TOOL_TIMEOUT", DEFAULT_CALL_TIMEOUT_S),
                      auth_dir=data_dir())
