"""Claude Code's MCP servers in ~/.claude.json (user scope at the top, local scope under
projects[path]) are read as the user's own, in Claude Code's order among themselves, with
Loom's own mcp.json winning a name clash and a project never replacing one of them."""

from __future__ import annotations

import json
from pathlib import Path

from loom_engine.mcp.config import load_mcp_config
from loom_engine.paths import claude_config_file


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _claude_json(tmp_path: Path, workspace: Path) -> Path:
    return _write(tmp_path / "home" / ".claude.json", {
        "numStartups": 12, "tipsHistory": {"x": 1},  # Claude Code's own keys: left alone
        "mcpServers": {"u": {"command": "claude-user-u"}, "both": {"command": "claude-user-both"},
                       "time": {"command": "claude-user-time"}},
        "projects": {str(workspace): {"allowedTools": [], "mcpServers": {
            "both": {"command": "claude-local-both"}, "l": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}},
            "/elsewhere": {"mcpServers": {"other": {"command": "not-this-project"}}}}})


def test_user_and_local_servers_are_read_local_winning_and_looms_own_winning_over_both(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    claude = _claude_json(tmp_path, workspace)
    _write(tmp_path / "cfg" / "mcp.json", {"mcpServers": {"time": {"command": "loom-time"}}})
    config = load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=claude)
    assert [(s.name, s.command or s.url, s.scope) for s in config.servers] == [
        ("both", "claude-local-both", "claude-local"), ("l", "http://127.0.0.1:9/mcp", "claude-local"),
        ("time", "loom-time", "user"), ("u", "claude-user-u", "claude-user")]
    assert config.problems == ()
    assert config.get("u") is not None and config.get("u").source == claude  # type: ignore[union-attr]


def test_local_wins_over_the_project_and_the_project_never_replaces_a_user_server(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    claude = _claude_json(tmp_path, workspace)
    project = _write(workspace / ".mcp.json", {"mcpServers": {
        "both": {"command": "project-both"}, "U": {"command": "project-u"}, "p": {"command": "project-p"}}})
    config = load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=claude)
    chosen = {s.name: (s.command, s.scope) for s in config.servers}
    assert chosen["both"] == ("claude-local-both", "claude-local")
    assert chosen["p"] == ("project-p", "project")
    assert "U" not in chosen and chosen["u"] == ("claude-user-u", "claude-user")
    lines = [p.line() for p in config.problems]
    assert f"{project}: server 'U': ignored: your own server 'u' ({claude}) is used" in lines


def test_not_read_when_turned_off_and_a_file_without_servers_is_fine(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _claude_json(tmp_path, workspace)  # there, but the switch is off
    assert load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=None).servers == ()
    assert claude_config_file(None) is None  # the switch off: no file to read
    plain = _write(tmp_path / "plain" / ".claude.json", {"numStartups": 1, "projects": {str(workspace): {}}})
    assert load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=plain) == load_mcp_config(
        workspace, tmp_path / "cfg", env={})


def test_a_broken_file_or_entry_is_one_line_and_the_rest_still_loads(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _write(tmp_path / "cfg" / "mcp.json", {"mcpServers": {"mine": {"command": "m"}}})
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    config = load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=broken)
    assert [s.name for s in config.servers] == ["mine"]
    assert [p.line() for p in config.problems] == [
        f"{broken}: not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1); "
        "none of its MCP servers is used"]
    odd = _write(tmp_path / "odd.json", {"mcpServers": {"bad": {"type": "sse"}, "ok": {"command": "ok"}},
                                          "projects": {str(workspace): {"mcpServers": ["not", "a", "table"]}}})
    config = load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=odd)
    assert [s.name for s in config.servers] == ["mine", "ok"]
    assert [p.line() for p in config.problems] == [
        f"{odd}: server 'bad': a sse server needs \"url\"",
        f'{odd}: projects["{workspace}"].mcpServers is not a JSON object; skipped']


def test_where_the_file_is_and_how_listings_name_it(tmp_path: Path) -> None:
    home = Path.home()
    assert claude_config_file(home / ".claude", {}) == home / ".claude.json"
    moved = tmp_path / "claude-config"
    assert claude_config_file(moved, {"CLAUDE_CONFIG_DIR": str(moved)}) == moved / ".claude.json"
    workspace = tmp_path / "ws"
    config = load_mcp_config(workspace, tmp_path / "cfg", env={}, claude_file=_claude_json(tmp_path, workspace))
    origins = {s.name: s.origin for s in config.servers}
    assert origins == {"both": f"{tmp_path}/home/.claude.json: local", "l": f"{tmp_path}/home/.claude.json: local",
                       "time": f"{tmp_path}/home/.claude.json: user", "u": f"{tmp_path}/home/.claude.json: user"}
