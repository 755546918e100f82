"""MCP in the real chat (installed `loom` in tmux): a project's server in the start-up
question, the status bar, and /mcp, at 120 and 60 columns."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.mcp_servers import ReferenceServers
from tests.doubles.terminal import open_loom, terminal_env


@pytest.mark.parametrize("width", [120, 60])
def test_project_server_question_then_mcp_screen(tmp_path: Path, workspace: Path, width: int,
                                                 reference_servers: ReferenceServers) -> None:
    clock = reference_servers.python_server("mcp_server_time", "--local-timezone", "UTC")
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": clock}}))
    with FakeLLMServer() as server:
        env = terminal_env(tmp_path, server, MCP_TIMEOUT="60000")
        term = open_loom(workspace, env, width=width, height=40)
        try:
            screen = term.wait_for(lambda s: "don't trust" in s, "the question", timeout=90)
            assert "clock" in screen and "mcp_server_time" in screen and ".mcp.json" in screen
            time.sleep(1.3)  # answer keys are ignored for a second (typing guard); not an assertion
            term.keys("y")
            term.wait_for(lambda s: "don't trust" not in s and "1 MCP server" in s, "the status bar", timeout=90)
            term.type("/mcp")
            term.keys("Enter")
            screen = term.wait_for(lambda s: "clock  connected" in s, "/mcp", timeout=60)
            assert "get_current_time" in screen and "r reconnect" in screen
            term.keys("Escape")
            term.wait_for(lambda s: "clock  connected" not in s, "/mcp closed")
        finally:
            term.close()

    again = open_loom(workspace, terminal_env(tmp_path, None), width=width, height=40)
    try:
        screen = again.wait_for(lambda s: "1 MCP server" in s, "connected without asking", timeout=90)
        assert "don't trust" not in screen
    finally:
        again.close()
