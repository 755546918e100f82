"""`loom mcp list | get | add | remove`: the MCP server files, edited like `claude mcp`.

Two files: the user's ``mcp.json`` in Loom's config dir (scope ``user``, the default:
like Claude Code's default, a server added from the command line is private to the user
and never written into the repository) and the workspace's ``.mcp.json`` (scope
``project``: shared with everyone who clones the repository, so each of its servers runs
only once the user approved it in the chat). A write changes only the one server's
entry: the file's other keys and servers are kept as they were. Nothing here connects
to a server or imports the ``mcp`` package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from loom_engine.mcp.config import (
    USER_SCOPES,
    McpConfig,
    ServerConfig,
    load_mcp_config,
    parse_server,
    project_file,
    read_json_file,
    user_file,
)
from loom_engine.private_files import private_folder, write_private

from .workspace_records import WorkspaceRecords

FileScope = Literal["user", "project"]


class McpCommandError(Exception):
    """A one-line reason the command did nothing."""


@dataclass(frozen=True)
class Places:
    """Where the two files are and where the project approvals are recorded."""

    workspace: Path
    config_dir: Path
    data_dir: Path
    claude_file: Path | None = None  # Claude Code's ~/.claude.json (None: not read)

    def file(self, scope: FileScope) -> Path:
        return user_file(self.config_dir) if scope == "user" else project_file(self.workspace)

    def config(self) -> McpConfig:
        return load_mcp_config(self.workspace, self.config_dir, claude_file=self.claude_file)


def approval(places: Places, server: ServerConfig) -> str:
    """Whether a server may run: user servers always; a project server once approved."""
    if server.scope in USER_SCOPES:
        return ""
    decision = WorkspaceRecords(places.data_dir).mcp_decision(places.workspace, server.entry_hash)
    if decision is None:
        return "not approved yet (the chat asks)"
    return "approved" if decision else "refused"


def list_lines(places: Places) -> list[str]:
    config = places.config()
    lines: list[str] = []
    if not config.servers:
        lines.append("no MCP servers (add one with: loom mcp add NAME -- COMMAND ARGS…)")
    for server in config.servers:
        status = approval(places, server)
        lines.append(f"{server.name}: {server.describe()}  [{server.origin}]"
                     + (f"  {status}" if status else ""))
    lines += [f"problem: {p.line()}" for p in config.problems]
    return lines


def get_lines(places: Places, name: str) -> list[str]:
    config = places.config()
    server = config.get(name)
    if server is None:
        problem = next((p for p in config.problems if p.server == name), None)
        if problem is not None:
            raise McpCommandError(problem.line())
        raise McpCommandError(f"no MCP server named {name!r} (see loom mcp list)")
    lines = [f"{server.name}:", f"  scope: {server.scope} ({server.source})"]
    status = approval(places, server)
    if status:
        lines.append(f"  approval: {status}")
    lines.append(f"  type: {server.transport}")
    if server.transport == "stdio":
        lines.append(f"  command: {server.command}")
        lines.append(f"  args: {' '.join(server.args)}" if server.args else "  args: (none)")
        if server.cwd:
            lines.append(f"  cwd: {server.cwd}")
        lines += _table("env", server.entry.get("env"))
    else:
        lines.append(f"  url: {server.url}")
        lines += _table("headers", server.entry.get("headers"))
    if server.timeout_s is not None:
        lines.append(f"  timeout: {server.timeout_s * 1000:g} ms per call")
    if server.enabled_tools is not None:
        lines.append(f"  enabled tools: {', '.join(server.enabled_tools) or '(none)'}")
    if server.disabled_tools:
        lines.append(f"  disabled tools: {', '.join(server.disabled_tools)}")
    lines.append(remove_hint(server))
    return lines


def remove_hint(server: ServerConfig) -> str:
    if server.scope in ("claude-user", "claude-local"):  # Claude Code's file: its own command edits it
        scope = "user" if server.scope == "claude-user" else "local"
        return f"it is Claude Code's: claude mcp remove {server.name} -s {scope}"
    if server.scope == "cli":
        return "it comes from --mcp-config for this run"
    return f"remove it with: loom mcp remove {server.name} --scope {server.scope}"


def _table(title: str, value: Any) -> list[str]:
    """Env and headers as written (``${VAR}`` unexpanded: values may be secrets)."""
    if not isinstance(value, dict) or not value:
        return []
    return [f"  {title}:"] + [f"    {key}={item}" for key, item in value.items()]


def _pairs(items: Sequence[str], separator: str, what: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            raise McpCommandError(f"{what} {item!r} is not KEY{separator}VALUE")
        table[key.strip()] = value.strip() if separator == ":" else value
    return table


def make_entry(transport: str, target: Sequence[str], env: Sequence[str], headers: Sequence[str]) -> dict[str, Any]:
    """The ``mcpServers`` entry `loom mcp add` writes."""
    kind = "http" if transport in ("http", "streamable-http") else transport
    if target[:1] == ["--"]:  # options end at NAME, so click keeps the separator
        target = target[1:]
    if kind == "stdio":
        if not target:
            raise McpCommandError("a stdio server needs its command: loom mcp add NAME -- COMMAND ARGS…")
        if headers:
            raise McpCommandError("--header is for http and sse servers")
        entry: dict[str, Any] = {"type": "stdio", "command": target[0], "args": list(target[1:])}
        if env:
            entry["env"] = _pairs(env, "=", "-e")
        return entry
    if kind not in ("http", "sse"):
        raise McpCommandError(f"unknown transport {transport!r} (use stdio, http or sse)")
    if len(target) != 1:  # "an http", "an sse": both read with a vowel sound
        raise McpCommandError(f"an {kind} server needs one URL: loom mcp add --transport {kind} NAME URL")
    if env:
        raise McpCommandError("-e is for stdio servers (an http or sse server gets --header)")
    entry = {"type": kind, "url": target[0]}
    if headers:
        entry["headers"] = _pairs(headers, ":", "--header")
    return entry


def _read(path: Path) -> dict[str, Any]:
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise McpCommandError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise McpCommandError(f"{path}: {error}; fix it first") from error
    if not isinstance(data, dict):
        raise McpCommandError(f"{path} is not a JSON object; fix it first")
    return data


def _write(path: Path, data: dict[str, Any], scope: FileScope) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if scope == "user":  # in Loom's config folder: the user's alone
        private_folder(path.parent)
        write_private(path, text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)  # a crash never leaves half a file


class _AnyVariable(dict[str, str]):
    """The entry's shape is checked at add time; a ``${VAR}`` may be set only later."""

    def get(self, key: str, default: object = None) -> str:
        return "set"


def add(places: Places, name: str, entry: dict[str, Any], scope: FileScope) -> str:
    """Write ``entry`` as server ``name``; the one line to print."""
    path = places.file(scope)
    try:
        parse_server(name, entry, path, scope, _AnyVariable())
    except ValueError as error:
        raise McpCommandError(f"server {name!r}: {error}") from error
    data = _read(path)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpCommandError(f'{path}: "mcpServers" is not an object; fix it first')
    if name in servers:
        raise McpCommandError(f"{scope} server {name!r} exists already in {path} "
                              f"(loom mcp remove {name} --scope {scope} first)")
    servers[name] = entry
    _write(path, data, scope)
    note = " (each user approves it in the chat before it runs)" if scope == "project" else ""
    return f"added {scope} MCP server {name!r} to {path}{note}"


def remove(places: Places, name: str, scope: FileScope | None) -> str:
    scopes: list[FileScope] = [scope] if scope else ["user", "project"]
    found = [s for s in scopes if name in (_read(places.file(s)).get("mcpServers") or {})]
    if not found:
        where = f"the {scope} file" if scope else "the user or project file"
        raise McpCommandError(f"no MCP server named {name!r} in {where} (see loom mcp list)")
    if len(found) > 1:
        raise McpCommandError(f"{name!r} is both a user and a project server: say which with --scope")
    path = places.file(found[0])
    data = _read(path)
    del data["mcpServers"][name]
    _write(path, data, found[0])
    return f"removed {found[0]} MCP server {name!r} from {path}"
