"""MCP server configuration: Claude Code's ``.mcp.json`` format, read as is.

These places, later ones winning for a server of the same name:

* Claude Code's user-scope servers: ``mcpServers`` of ``~/.claude.json`` (scope
  ``claude-user``; read only when the user reads ``~/.claude``, see :func:`claude_servers`);
* ``.mcp.json`` at the workspace root (scope ``project``: a repository ships it, so
  its servers run only once the user approved that exact entry, see ``entry_hash``);
  it never replaces a server of the user's own (in any of the user's files): the user's
  rules for ``mcp__github__*`` are meant for their ``github``, so a project server named
  alike (as tool names spell it: cleaned, any case) is ignored and named;
* Claude Code's local-scope servers: ``projects["/abs/workspace"].mcpServers`` of
  ``~/.claude.json`` (scope ``claude-local``: the user's, for this project only);
* the user's ``mcp.json`` in Loom's config dir (scope ``user``: Loom's own wins);
* files given with ``--mcp-config FILE`` (scope ``cli``: the user named them).

So Claude Code's order holds among its own (local > project > user), and Loom's file
wins a name clash with any of them.

A file is data from anywhere (a cloned repository's ``.mcp.json``): one that is not
UTF-8, not JSON, too big, nested too deep or lists too many servers is one
:class:`ConfigProblem` and none of its servers is used; the run goes on without it.

Each file is ``{"mcpServers": {"name": {...}}}`` with ``type`` (``stdio``, ``http``
— ``streamable-http`` is read as ``http`` —, ``sse``; a server with ``command`` and no
type is stdio), ``command``, ``args``, ``env``, ``cwd``, ``url``, ``headers``,
``timeout`` (milliseconds per call), ``enabled_tools`` and ``disabled_tools``.
``${VAR}`` and ``${VAR:-default}`` are expanded in command, args, env, cwd, url and
headers. A bad entry becomes one :class:`ConfigProblem` naming the file and the
server; the other servers still load. Nothing here imports the ``mcp`` package.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .names import clean

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["user", "project", "cli", "claude-user", "claude-local"]
# The scopes of the user's own files: trusted, and never replaced by a project's server.
USER_SCOPES: frozenset[Scope] = frozenset({"user", "claude-user", "claude-local"})

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"
_TYPES: dict[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                                "streamablehttp": "http", "sse": "sse"}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Far beyond any real file: a server entry is a few hundred bytes and a few levels deep.
MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_SERVERS = 100


@dataclass(frozen=True)
class ServerConfig:
    """One configured server, its values expanded; ``entry`` is the entry as written."""

    name: str
    transport: Transport
    source: Path
    scope: Scope
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float | None = None  # per call; None: the manager's default
    enabled_tools: tuple[str, ...] | None = None  # None: all
    disabled_tools: tuple[str, ...] = ()
    entry: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def entry_hash(self) -> str:
        """What a user's approval of a project server is recorded by: the name and the
        entry as written (before ``${VAR}`` expansion), so a changed entry asks again."""
        return entry_hash(self.name, self.entry)

    @property
    def origin(self) -> str:
        """Where it comes from, for `loom mcp list` and /mcp: its scope, and for Claude
        Code's servers the file and Claude Code's name of the scope."""
        if self.scope not in ("claude-user", "claude-local"):
            return self.scope
        home = str(Path.home())
        where = "~" + str(self.source)[len(home):] if str(self.source).startswith(home + os.sep) else str(self.source)
        return f"{where}: {'user' if self.scope == 'claude-user' else 'local'}"

    def describe(self) -> str:
        """One line: the command line of a stdio server, the URL of the others."""
        if self.transport == "stdio":
            return shlex.join([self.command, *self.args])
        return f"{self.url} ({self.transport})"

    def environment_read(self) -> tuple[str, ...]:
        """The environment variables the entry as written reads with ``${VAR}``: what the
        user should see before approving it (a header or env value can carry a secret)."""
        return tuple(sorted({m.group(1) for m in _VAR.finditer(json.dumps(self.entry))}))

    def tool_enabled(self, tool: str) -> bool:
        if tool in self.disabled_tools:
            return False
        return self.enabled_tools is None or tool in self.enabled_tools


def same_server_name(name: str) -> str:
    """What two server names are compared by: their tool-name spelling, in any case
    (permission rules name servers case-insensitively)."""
    return clean(name).casefold()


def entry_hash(name: str, entry: Mapping[str, Any]) -> str:
    canonical = json.dumps([name, entry], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ConfigProblem:
    source: Path
    server: str | None  # None: the file as a whole
    message: str

    def line(self) -> str:
        where = f"{self.source}" + (f": server {self.server!r}" if self.server else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class McpConfig:
    servers: tuple[ServerConfig, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()

    def get(self, name: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)

    def by_scope(self, scope: Scope) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if s.scope == scope)


def expand(text: str, env: Mapping[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}``; ValueError names a variable that is not set."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                raise ValueError(f"${{{name}}} is not set (write ${{{name}:-default}} for a default)")
            return default
        return value

    return _VAR.sub(one, text)


def parse_server(name: str, entry: Any, source: Path, scope: Scope,
                 env: Mapping[str, str]) -> ServerConfig:
    """One entry of ``mcpServers``; ValueError with a one-line reason when it is unusable."""
    if not isinstance(entry, dict):
        raise ValueError("the entry is not an object")
    kind = entry.get("type")
    if kind is None:
        if "url" in entry:
            raise ValueError('"url" without "type": add "type": "http" or "type": "sse"')
        if "command" not in entry:
            raise ValueError('neither "command" nor "url" is given')
        transport: Transport = "stdio"
    else:
        if not isinstance(kind, str) or kind.lower() not in _TYPES:
            raise ValueError(f'unknown type {kind!r} (use "stdio", "http" or "sse")')
        transport = _TYPES[kind.lower()]

    def text(key: str) -> str:
        value = entry.get(key, "")
        if not isinstance(value, str):
            raise ValueError(f'"{key}" must be a string')
        return expand(value, env)

    def strings(key: str) -> tuple[str, ...]:
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f'"{key}" must be a list of strings')
        return tuple(value)

    def table(key: str) -> dict[str, str]:
        value = entry.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ValueError(f'"{key}" must be an object of strings')
        return {str(k): expand(v, env) for k, v in value.items()}

    timeout = entry.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool)
                                or timeout <= 0):
        raise ValueError('"timeout" must be a positive number of milliseconds')
    enabled = entry.get("enabled_tools", entry.get("enabledTools"))
    disabled = entry.get("disabled_tools", entry.get("disabledTools", []))
    for key, value in (("enabled_tools", enabled), ("disabled_tools", disabled)):
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise ValueError(f'"{key}" must be a list of tool names')
    config = ServerConfig(name=name, transport=transport, source=source, scope=scope,
                          timeout_s=timeout / 1000 if timeout is not None else None,
                          enabled_tools=tuple(enabled) if enabled is not None else None,
                          disabled_tools=tuple(disabled or ()), entry=entry)
    if transport == "stdio":
        command = text("command")
        if not command:
            raise ValueError('a stdio server needs "command"')
        cwd = text("cwd") or None
        if cwd is not None and not os.path.isabs(cwd):
            cwd = str(source.parent / cwd)
        return replace(config, command=command, args=tuple(expand(a, env) for a in strings("args")),
                       env=table("env"), cwd=cwd)
    url = text("url")
    if not url:
        raise ValueError(f'a {transport} server needs "url"')
    return replace(config, url=url, headers=table("headers"))


def read_json_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The JSON value ``path`` holds. ValueError with a one-line reason when it is too
    big, not UTF-8, not JSON or nested too deep; OSError (FileNotFoundError...) passes."""
    with open(path, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(f"larger than {max_bytes:,} bytes: not read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 text (byte 0x{raw[error.start]:02x} at position {error.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise ValueError(f"not valid JSON: {error}") from None
    if _depth(data) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return data


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (walked without recursion)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def load_file(path: Path, scope: Scope, env: Mapping[str, str] | None = None
              ) -> tuple[list[ServerConfig], list[ConfigProblem]]:
    """The servers of one file; a missing file has none and no problem."""
    env = os.environ if env is None else env
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        return [], []
    except OSError as error:
        return [], [ConfigProblem(path, None, f"cannot read: {error.strerror or error}")]
    except ValueError as error:
        return [], [ConfigProblem(path, None, f"{error}; none of its servers is used")]
    servers_data = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers_data, dict):
        return [], [ConfigProblem(path, None, 'no "mcpServers" object')]
    return servers_of(servers_data, path, scope, env)


def servers_of(servers_data: Mapping[str, Any], path: Path, scope: Scope, env: Mapping[str, str]
               ) -> tuple[list[ServerConfig], list[ConfigProblem]]:
    """The servers of one ``mcpServers`` object of the file at ``path``."""
    if len(servers_data) > MAX_SERVERS:
        return [], [ConfigProblem(path, None, f"{len(servers_data):,} servers, more than the {MAX_SERVERS} "
                                              "a file may list; none of them is used")]
    servers: list[ServerConfig] = []
    problems: list[ConfigProblem] = []
    for name, entry in servers_data.items():
        try:
            servers.append(parse_server(str(name), entry, path, scope, env))
        except ValueError as error:
            problems.append(ConfigProblem(path, str(name), str(error)))
    return servers, problems


def user_file(config_dir: Path) -> Path:
    return config_dir / USER_FILE


def project_file(workspace_root: Path) -> Path:
    return workspace_root / PROJECT_FILE


def load_mcp_config(workspace_root: Path, config_dir: Path, extra_files: Sequence[Path] = (),
                    env: Mapping[str, str] | None = None, *, include_project: bool = True,
                    claude_file: Path | None = None) -> McpConfig:
    """Every configured server, in the order of the module's list (a later one replaces
    an earlier one of the same name, except that a project server never replaces one of
    the user's own), sorted by name. ``claude_file``: Claude Code's ``~/.claude.json``
    (None: not read, as when reading ``~/.claude`` is turned off)."""
    env = os.environ if env is None else env
    loaded: list[tuple[Scope, list[ServerConfig], list[ConfigProblem]]] = []
    claude_user, claude_local, claude_problems = (
        claude_servers(claude_file, workspace_root, env) if claude_file is not None else ([], [], []))
    loaded.append(("claude-user", claude_user, claude_problems))
    if include_project:
        loaded.append(("project", *load_file(project_file(workspace_root), "project", env)))
    loaded.append(("claude-local", claude_local, []))
    loaded.append(("user", *load_file(user_file(config_dir), "user", env)))
    for extra in extra_files:
        if not Path(extra).exists():
            loaded.append(("cli", [], [ConfigProblem(Path(extra), None, "no such file")]))
        else:
            loaded.append(("cli", *load_file(Path(extra), "cli", env)))
    # The user's server names, the broken entries' too: a name the user gave is theirs.
    owned: dict[str, ServerConfig | ConfigProblem] = {}
    for scope, found, wrong in loaded:
        if scope in USER_SCOPES:
            owned.update((same_server_name(s.name), s) for s in found)
            owned.update((same_server_name(p.server), p) for p in wrong if p.server is not None)
    by_name: dict[str, ServerConfig] = {}
    problems: list[ConfigProblem] = []
    for scope, found, wrong in loaded:
        problems += wrong
        for server in found:
            own = owned.get(same_server_name(server.name)) if scope == "project" else None
            if own is not None:
                problems.append(ConfigProblem(server.source, server.name, f"ignored: your own server "
                                              f"{_name_of(own)!r} ({own.source}) is used"))
                continue
            by_name[server.name] = server
    servers = tuple(sorted(by_name.values(), key=lambda s: s.name))
    return McpConfig(servers, tuple(problems))


def _name_of(owned: ServerConfig | ConfigProblem) -> str:
    return owned.name if isinstance(owned, ServerConfig) else owned.server or ""


# -- Claude Code's ~/.claude.json ---------------------------------------------------------
# Where `claude mcp add` writes: user scope under the top-level ``mcpServers``, local scope
# (one project, the user's alone) under ``projects["/abs/path"].mcpServers``. The file is
# the user's own, so its servers are trusted like Loom's ``mcp.json``; any other key of it
# (Claude Code's history and caches) is left alone and nothing here writes to it.

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
