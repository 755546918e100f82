"""Claude Code's MCP servers in its own config file, ``~/.claude.json`` (where `claude mcp
add` writes them): user scope under the top-level ``mcpServers``, local scope (one
project, the user's alone) under ``projects["/abs/path"].mcpServers``.

The file is the user's own, so its servers are trusted like Loom's ``mcp.json``. It
also holds Claude Code's history and caches, so it may be large, and any other key of it
is left alone: a file without ``mcpServers`` is fine, and nothing here writes to it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .config import ConfigProblem, ServerConfig, read_json_file, servers_of

# Claude Code keeps its project history in the same file: a heavy user's runs to megabytes.
MAX_CLAUDE_FILE_BYTES = 64_000_000


def claude_servers(path: Path, workspace_root: Path, env: Mapping[str, str]
                   ) -> tuple[list[ServerConfig], list[ServerConfig], list[ConfigProblem]]:
    """(user-scope servers, this workspace's local-scope servers, problems). A missing
    file has none and no problem; an unreadable one is one problem."""
    try:
        data = read_json_file(path, MAX_CLAUDE_FILE_BYTES)
    except FileNotFoundError:
        return [], [], []
    except OSError as error:
        return [], [], [ConfigProblem(path, None, f"cannot read: {error.strerror or error}")]
    except ValueError as error:
        return [], [], [ConfigProblem(path, None, f"{error}; none of its MCP servers is used")]
    if not isinstance(data, dict):
        return [], [], [ConfigProblem(path, None, "not a JSON object; none of its MCP servers is used")]
    problems: list[ConfigProblem] = []
    user, wrong = _servers(data, path, "claude-user", env, where="mcpServers")
    problems += wrong
    project = _project_entry(data.get("projects"), workspace_root)
    local: list[ServerConfig] = []
    if project is not None:
        local, wrong = _servers(project[1], path, "claude-local", env,
                                where=f'projects["{project[0]}"].mcpServers')
        problems += wrong
    return user, local, problems


def _servers(table: Mapping[str, Any], path: Path, scope: Literal["claude-user", "claude-local"],
             env: Mapping[str, str], *, where: str) -> tuple[list[ServerConfig], list[ConfigProblem]]:
    servers = table.get("mcpServers")
    if servers is None:
        return [], []
    if not isinstance(servers, dict):
        return [], [ConfigProblem(path, None, f"{where} is not a JSON object; skipped")]
    return servers_of(servers, path, scope, env)


def _project_entry(projects: Any, workspace_root: Path) -> tuple[str, Mapping[str, Any]] | None:
    """The entry Claude Code keeps for this workspace: keyed by its absolute path, as
    written or with symbolic links resolved."""
    if not isinstance(projects, dict):
        return None
    for key in dict.fromkeys((str(workspace_root.absolute()), os.path.realpath(workspace_root))):
        entry = projects.get(key)
        if isinstance(entry, dict):
            return key, entry
    return None
