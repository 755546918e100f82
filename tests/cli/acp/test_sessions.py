"""An editor's session is built as `loom run` builds its agent: the project's additions
only when trusted, the editor's MCP servers as the user's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp.schema import AcpMcpServer, EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

from loom_cli.acp.sessions import build_session, client_servers, untrusted_notice
from loom_cli.bootstrap import RunOptions
from tests.doubles.loom_command import isolate_loom


def test_the_editors_servers_become_mcp_entries_and_acp_ones_are_left_out() -> None:
    entries, refused = client_servers([
        McpServerStdio(name="files", command="npx", args=["-y", "srv"], env=[EnvVariable(name="TOKEN", value="t")]),
        HttpMcpServer(type="http", name="web", url="https://mcp.example/x",
                      headers=[HttpHeader(name="Authorization", value="Bearer b")]),
        AcpMcpServer(type="acp", name="inner", server_id="abc"),
    ])
    assert entries == {"files": {"command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": "t"}},
                       "web": {"type": "http", "url": "https://mcp.example/x",
                               "headers": {"Authorization": "Bearer b"}}}
    assert refused == ["MCP server 'inner': Loom does not take MCP over ACP; left out"]


def test_a_project_widens_nothing_until_trusted_and_the_editors_server_is_the_users(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_loom(monkeypatch, tmp_path, script=[{"text": "done"}])
    (workspace / ".loom").mkdir()
    (workspace / ".loom" / "settings.toml").write_text('permission_mode = "accept-edits"\n')
    (workspace / ".mcp.json").write_text('{"mcpServers": {"proj": {"command": "proj-server"}}}')
    server = McpServerStdio(name="editor", command=sys.executable, args=["-c", "pass"], env=[])
    template = RunOptions(provider="scripted", model="scripted")

    built, _ = build_session(template, workspace, [server])
    try:
        assert built.agent.permissions is not None and built.agent.permissions.mode == "default"
        assert built.mcp_plan is not None
        assert [s.name for s in built.mcp_plan.use] == ["editor"] and built.mcp_plan.use[0].scope == "cli"
        notice = untrusted_notice(built)
        assert notice is not None and "accept-edits" in notice and "project MCP server proj" in notice
    finally:
        built.session.close()

    trusted, _ = build_session(RunOptions(provider="scripted", model="scripted", trust_project=True,
                                          trust_project_mcp=True), workspace, [])
    try:
        assert trusted.agent.permissions is not None and trusted.agent.permissions.mode == "accept-edits"
        assert trusted.mcp_plan is not None and [s.name for s in trusted.mcp_plan.use] == ["proj"]
        assert untrusted_notice(trusted) is None
    finally:
        trusted.session.close()
