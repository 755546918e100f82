"""`loom mcp list | get | add | remove`: the server files, edited like `claude mcp`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from loom_cli.workspace_records import WorkspaceRecords
from loom_engine.mcp.config import load_mcp_config
from tests.doubles.loom_command import LOOM_SCRIPT


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
    env.update(LOOM_CONFIG_DIR=str(tmp_path / "config"), LOOM_DATA_DIR=str(tmp_path / "data"))
    return workspace, env


def loom(places: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    workspace, env = places
    return subprocess.run([*LOOM_SCRIPT, "mcp", *args], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=60)


def test_add_writes_the_user_file_by_default_and_keeps_its_other_content(
        places: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    user_file = tmp_path / "config" / "mcp.json"
    user_file.parent.mkdir()
    user_file.write_text(json.dumps({"note": "mine", "mcpServers": {"old": {"command": "old-server"}}}))
    done = loom(places, "add", "-e", "TZ=UTC", "time", "--", "uvx", "mcp-server-time", "--local-timezone", "UTC")
    assert done.returncode == 0, done.stderr
    assert "added user MCP server 'time'" in done.stdout
    data = json.loads(user_file.read_text())
    assert data["note"] == "mine" and data["mcpServers"]["old"] == {"command": "old-server"}
    assert data["mcpServers"]["time"] == {"type": "stdio", "command": "uvx",
                                          "args": ["mcp-server-time", "--local-timezone", "UTC"],
                                          "env": {"TZ": "UTC"}}
    assert not (places[0] / ".mcp.json").exists()  # nothing written into the repository


def test_project_scope_writes_mcp_json_that_loom_reads(places: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    done = loom(places, "add", "--transport", "http", "--scope", "project", "-H", "X-Api-Key: abc",
                "web", "https://example.test/mcp")
    assert done.returncode == 0, done.stderr
    server = load_mcp_config(places[0], tmp_path / "config").get("web")
    assert server is not None and server.scope == "project" and server.transport == "http"
    assert server.url == "https://example.test/mcp" and dict(server.headers) == {"X-Api-Key": "abc"}


def test_list_shows_scope_command_and_whether_a_project_server_is_approved(
        places: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    assert "no MCP servers" in loom(places, "list").stdout
    loom(places, "add", "time", "--", "uvx", "mcp-server-time")
    loom(places, "add", "-s", "project", "git", "--", "uvx", "mcp-server-git")
    lines = loom(places, "list").stdout.splitlines()
    assert lines == ["git: uvx mcp-server-git  [project]  not approved yet (the chat asks)",
                     "time: uvx mcp-server-time  [user]"]
    git = load_mcp_config(places[0], tmp_path / "config").get("git")
    assert git is not None
    WorkspaceRecords(tmp_path / "data").decide_mcp(places[0], git.entry_hash, True)
    assert "git: uvx mcp-server-git  [project]  approved" in loom(places, "list").stdout


def test_get_shows_one_server_in_full(places: tuple[Path, dict[str, str]]) -> None:
    loom(places, "add", "-e", "TOKEN=${MY_TOKEN}", "fs", "--", "npx", "-y", "server-fs", "/tmp")
    unset = loom(places, "get", "fs")
    assert unset.returncode == 1 and "${MY_TOKEN} is not set" in unset.stderr
    places[1]["MY_TOKEN"] = "secret"
    out = loom(places, "get", "fs").stdout
    assert "scope: user" in out and "command: npx" in out and "args: -y server-fs /tmp" in out
    assert "TOKEN=${MY_TOKEN}" in out  # as written: a secret in the environment is not printed
    missing = loom(places, "get", "nope")
    assert missing.returncode == 1 and missing.stderr == "loom: no MCP server named 'nope' (see loom mcp list)\n"


def test_remove_and_the_one_line_errors(places: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    loom(places, "add", "time", "--", "uvx", "mcp-server-time")
    again = loom(places, "add", "time", "--", "other")
    assert again.returncode == 1 and "exists already" in again.stderr and len(again.stderr.splitlines()) == 1
    no_url = loom(places, "add", "-t", "sse", "events")
    assert no_url.returncode == 1 and "needs one URL" in no_url.stderr
    removed = loom(places, "remove", "time")
    assert removed.returncode == 0 and "removed user MCP server 'time'" in removed.stdout
    assert json.loads((tmp_path / "config" / "mcp.json").read_text()) == {"mcpServers": {}}
    assert loom(places, "remove", "time").returncode == 1


def test_a_broken_file_is_not_overwritten(places: tuple[Path, dict[str, str]]) -> None:
    project = places[0] / ".mcp.json"
    project.write_text("{broken")
    done = loom(places, "add", "-s", "project", "x", "--", "cmd")
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    assert project.read_text() == "{broken"


def test_list_names_claude_codes_servers_and_the_switch_turns_them_off(
        places: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    workspace, env = places
    claude = tmp_path / "claude-config"
    claude.mkdir()
    (claude / ".claude.json").write_text(json.dumps({
        "mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}},
        "projects": {str(workspace): {"mcpServers": {"notes": {"command": "notes-server"}}}}}))
    env = {**env, "CLAUDE_CONFIG_DIR": str(claude)}
    listed = loom((workspace, env), "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"fetch: uvx mcp-server-fetch  [{claude}/.claude.json: user]",
                                          f"notes: notes-server  [{claude}/.claude.json: local]"]
    got = loom((workspace, env), "get", "notes")
    assert got.stdout.splitlines()[-1] == "it is Claude Code's: claude mcp remove notes -s local"
    off = loom((workspace, {**env, "LOOM_READ_CLAUDE_HOME": "0"}), "list")
    assert off.stdout.startswith("no MCP servers")
