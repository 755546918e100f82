"""A repository set up for Claude Code, first start of the real chat (installed `loom` in
tmux), at 120 and 60 columns: one question shows the settings that widen, the hook with its
script and the MCP server; one "y" answers it; then a prompt runs with all three in effect
(the project's allow rule lets the server's tool run unasked, the hook runs before it, the
server answers), and the next start asks nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.mcp_servers import ReferenceServers
from tests.doubles.terminal import TMUX, open_loom, terminal_env

pytestmark = pytest.mark.skipif(not Path(TMUX).exists(), reason="tmux is not installed")

TOOL = "mcp__clock__get_current_time"
GUARD_KEYS = 1.3  # answer keys are ignored for a second after the question opens (typing guard)


def _flat(screen: str) -> str:
    """The screen as one line: box borders gone, wrapped lines joined."""
    return " ".join(line.strip(" │╭╮╰╯─") for line in screen.splitlines() if line.strip(" │╭╮╰╯─"))


def _claude_code_repository(workspace: Path, log: Path, servers: ReferenceServers) -> None:
    (workspace / ".claude" / "hooks").mkdir(parents=True)
    script = workspace / ".claude" / "hooks" / "log.sh"
    script.write_text(f"#!/bin/sh\ncat >> '{log}'\necho >> '{log}'\n")
    script.chmod(0o755)
    (workspace / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": [TOOL]},
        "hooks": {"PreToolUse": [{"matcher": "mcp__clock__.*", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/log.sh"}]}]}}))
    clock = servers.python_server("mcp_server_time", "--local-timezone", "UTC")
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": clock}}))


@pytest.mark.parametrize("width", [120, 60])
def test_one_question_then_the_project_works(tmp_path: Path, workspace: Path, width: int,
                                             reference_servers: ReferenceServers) -> None:
    log = workspace / "hook-log.jsonl"  # a project hook runs in the sandbox: it writes in the workspace
    _claude_code_repository(workspace, log, reference_servers)
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool(TOOL, {"timezone": "UTC"}), Reply.text("The clock answered."))
        env = terminal_env(tmp_path, server, MCP_TIMEOUT="60000")
        term = open_loom(workspace, env, width=width, height=50)
        try:
            screen = _flat(term.wait_for(lambda s: "don't trust" in _flat(s), "the question", timeout=90))
            for expected in ("would add 1 setting that widens, 1 hook, 1 MCP server.",
                             f'allow rule "{TOOL}"', "runs without asking",
                             "PreToolUse  mcp__clock__.*", '"$CLAUDE_PROJECT_DIR"/.claude/hooks/log.sh',
                             "runs .claude/hooks/log.sh", "clock", "mcp_server_time --local-timezone UTC",
                             "gets env PYTHONPATH (values not shown)", "y trust all of it", "n / Esc"):
                assert expected in screen, expected
            time.sleep(GUARD_KEYS)
            term.keys("y")
            # Answered once: no second question, and the project's server connects.
            term.wait_for(lambda s: "don't trust" not in _flat(s) and "1 MCP server" in s, "the server connected",
                          timeout=90)
            term.ask("what time is it?")
            screen = term.wait_for(lambda s: "The clock answered." in s, "the answer", timeout=90)
            assert "Allow" not in screen  # the project's allow rule is in effect: nothing asked
        finally:
            term.close()
        assert TOOL in log.read_text()  # the project's hook ran before the tool
        results = [block for block in server.requests[1].body["messages"][-1]["content"]
                   if block.get("type") == "tool_result"]
        assert results and '"day_of_week"' in str(results[0]["content"]) and not results[0].get("is_error")

    again = open_loom(workspace, terminal_env(tmp_path, None), width=width, height=50)
    try:
        screen = again.wait_for(lambda s: "1 MCP server" in s, "connected without asking", timeout=90)
        assert "don't trust" not in _flat(screen)
    finally:
        again.close()
