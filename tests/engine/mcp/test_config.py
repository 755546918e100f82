"""The MCP configuration: Claude Code's .mcp.json read as is, problems one line each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from loom_engine.mcp.config import ServerConfig, expand, load_mcp_config
from loom_engine.mcp.names import tool_name as loom_tool_name


def _write(path: Path, servers: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_claude_code_format_and_types(tmp_path: Path) -> None:
    _write(tmp_path / "ws/.mcp.json", {
        "local": {"command": "node", "args": ["srv.js", "--x"], "env": {"A": "1"}},
        "remote": {"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X": "y"}},
        "events": {"type": "sse", "url": "https://example.com/sse", "timeout": 1500},
    })
    config = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={})
    assert not config.problems
    local, remote, events = config.get("local"), config.get("remote"), config.get("events")
    assert isinstance(local, ServerConfig) and local.transport == "stdio" and local.scope == "project"
    assert local.args == ("srv.js", "--x") and local.env == {"A": "1"}
    assert remote is not None and remote.transport == "http" and remote.headers == {"X": "y"}
    assert events is not None and events.transport == "sse" and events.timeout_s == 1.5
    assert [s.name for s in config.servers] == ["events", "local", "remote"]


def test_each_broken_entry_is_one_line_naming_file_and_server(tmp_path: Path) -> None:
    project = _write(tmp_path / "ws/.mcp.json", {
        "good": {"command": "node"},
        "weird": {"type": "websocket", "url": "ws://x"},
        "untyped": {"url": "https://example.com/mcp"},
    })
    config = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={})
    assert [s.name for s in config.servers] == ["good"]
    lines = [p.line() for p in config.problems]
    assert len(lines) == 2 and all("\n" not in line and str(project) in line for line in lines)
    assert any("'weird'" in line and "unknown type 'websocket'" in line for line in lines)
    assert any("'untyped'" in line and '"url" without "type"' in line for line in lines)


def test_syntax_error_names_the_file_and_other_files_still_load(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws/.mcp.json").write_text('{"mcpServers": {"a": ')
    _write(tmp_path / "cfg/mcp.json", {"mine": {"command": "node"}})
    config = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={})
    assert [s.name for s in config.servers] == ["mine"]
    assert config.servers[0].scope == "user"
    (problem,) = config.problems
    assert ".mcp.json" in problem.line() and "not valid JSON" in problem.line()


def test_variables_expand_with_defaults(tmp_path: Path) -> None:
    _write(tmp_path / "ws/.mcp.json", {
        "s": {"command": "${BIN:-node}", "args": ["${DIR}/x", "${MISSING:-fallback}"],
              "env": {"TOKEN": "${TOKEN}"}},
        "h": {"type": "http", "url": "${HOST:-http://localhost:1}/mcp", "headers": {"A": "Bearer ${TOKEN}"}},
        "broken": {"command": "${NOT_SET}"},
    })
    config = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={"DIR": "/d", "TOKEN": "t0k"})
    s, h = config.get("s"), config.get("h")
    assert s is not None and s.command == "node" and s.args == ("/d/x", "fallback") and s.env == {"TOKEN": "t0k"}
    assert h is not None and h.url == "http://localhost:1/mcp" and h.headers == {"A": "Bearer t0k"}
    (problem,) = config.problems
    assert problem.server == "broken" and "${NOT_SET} is not set" in problem.line()
    assert expand("${A:-x}", {"A": ""}) == "x"


def test_later_scopes_win_but_a_project_never_replaces_the_users_own(tmp_path: Path) -> None:
    _write(tmp_path / "cfg/mcp.json", {"s": {"command": "user-cmd"}})
    project = _write(tmp_path / "ws/.mcp.json", {"s": {"command": "project-cmd"}, "p": {"command": "p-cmd"}})
    cli = _write(tmp_path / "extra.json", {"s": {"command": "cli-cmd"}})
    config = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={})
    assert [(s.name, s.command, s.scope) for s in config.servers] == [("p", "p-cmd", "project"),
                                                                      ("s", "user-cmd", "user")]
    (ignored,) = config.problems
    assert ignored.line() == (f"{project}: server 's': ignored: your own server 's' "
                              f"({tmp_path / 'cfg/mcp.json'}) is used")
    chosen = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", [cli], env={}).get("s")
    assert chosen is not None and chosen.command == "cli-cmd" and chosen.scope == "cli"


def test_the_hash_follows_the_entry(tmp_path: Path) -> None:
    _write(tmp_path / "ws/.mcp.json", {"s": {"command": "project-cmd"}})
    first = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={}).servers[0].entry_hash
    _write(tmp_path / "ws/.mcp.json", {"s": {"command": "project-cmd", "args": ["--more"]}})
    assert load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={}).servers[0].entry_hash != first


def test_enabled_and_disabled_tools(tmp_path: Path) -> None:
    _write(tmp_path / "ws/.mcp.json", {"s": {"command": sys.executable, "enabled_tools": ["a", "b"],
                                             "disabled_tools": ["b"]}})
    server = load_mcp_config(tmp_path / "ws", tmp_path / "cfg", env={}).servers[0]
    assert [server.tool_enabled(t) for t in ("a", "b", "c")] == [True, False, False]


def test_tool_names_are_clean_and_short() -> None:
    assert loom_tool_name("my server", "get.thing") == "mcp__my_server__get_thing"
    long = loom_tool_name("s" * 40, "t" * 40)
    assert len(long) == 64 and long != loom_tool_name("s" * 40, "t" * 39 + "u")
