"""`loom run` waits for its MCP servers before the first request, and names each one that
did not come up (issue 22, item 11)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env
from tests.doubles.mcp_servers import MISBEHAVING

from .helpers import tool_names, write_servers

# A server as `npx -y` is on a slow machine: several seconds before it answers at all
# (longer than the 5 s the first request used to wait).
SLOW_START_S = 6


def test_a_slow_server_s_tools_are_in_the_first_request(tmp_path: Path, workspace: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    write_servers(tmp_path / "config" / "mcp.json", {"slow": {
        "command": "sh", "args": ["-c", f'sleep {SLOW_START_S}; exec "{sys.executable}" "{MISBEHAVING}"']}})
    fake_llm.enqueue(Reply.text("planned with every tool"))
    done = loom(["run", "plan it"], workspace, loom_env(tmp_path, fake_llm), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "mcp__slow__peek" in tool_names(fake_llm.requests[0])
    assert "slow" not in done.stderr


def test_a_server_that_does_not_come_up_is_named(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    # It never answers the handshake; MCP_TIMEOUT bounds the wait.
    write_servers(tmp_path / "config" / "mcp.json", {
        "mute": {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]},
        # A shell that exits at once (not a Python, whose start on a loaded machine may
        # itself outlast the wait): it fails well before the wait ends.
        "broken": {"command": "/bin/sh", "args": ["-c", "exit 3"]}})
    fake_llm.enqueue(Reply.text("went on without it"))
    done = loom(["run", "go"], workspace, loom_env(tmp_path, fake_llm, MCP_TIMEOUT="4000"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "loom: MCP server 'mute' did not come up within 4 s; the run starts without its tools\n" in done.stderr
    assert "loom: MCP server 'broken' failed: " in done.stderr
    assert "still connecting" not in done.stderr
    assert not [name for name in tool_names(fake_llm.requests[0]) if name.startswith("mcp__")]
