"""MCP in the chat, with the real bootstrap and real servers: the status bar, /mcp, a
project's servers in the start-up question (asked once; a changed entry asks again), server
prompts as slash commands and @server:uri resources."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loom_cli.bootstrap import RunOptions, build_agent
from loom_cli.tui.app import LoomApp
from loom_cli.tui.mcp_screens import McpScreen
from loom_cli.tui.options import TuiOptions
from loom_cli.tui.trust_screen import ProjectTrustScreen
from tests.cli.tui.helpers import screen_text, wait_for
from tests.doubles.mcp_servers import ReferenceServers

TIMEOUT = 40.0


@pytest.fixture
def env(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_", "MCP_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOOM_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MCP_TIMEOUT", "60000")
    return workspace


def write(path: Path, servers: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))


def chat(workspace: Path, tmp_path: Path, turns: list[dict[str, Any]] | None = None) -> LoomApp:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(turns or [{"text": "ok"}] * 5))

    def factory(options: TuiOptions) -> Any:
        return build_agent(RunOptions(cwd=options.workspace, provider="scripted", script=script), interactive=True)

    return LoomApp(TuiOptions(workspace=workspace, agent_factory=factory, data_dir=tmp_path / "data",
                              permission_guard_s=0.0, manage_gc=False))


def time_server(servers: ReferenceServers, *args: str) -> dict[str, Any]:
    return servers.python_server("mcp_server_time", "--local-timezone", "UTC", *args)


async def until(pilot: Any, condition: Callable[[], bool]) -> None:
    try:
        await wait_for(pilot, condition, timeout=TIMEOUT)
    except AssertionError as error:
        raise AssertionError(f"{error}; screen:\n{screen_text(pilot.app)}") from None


async def test_status_bar_and_mcp_list_the_servers_with_their_states(
        env: Path, tmp_path: Path, reference_servers: ReferenceServers) -> None:
    write(tmp_path / "config" / "mcp.json", {
        "time": time_server(reference_servers),
        "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}})
    app = chat(env, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "1 MCP server · 1 failed" in screen_text(app))
        await pilot.press(*"/mcp", "enter")
        await until(pilot, lambda: isinstance(app.screen, McpScreen))
        await until(pilot, lambda: "time  connected" in screen_text(app))
        text = screen_text(app)
        assert "broken  failed: " in text and "get_current_time" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, McpScreen))


async def test_a_project_server_is_asked_about_once_and_again_when_its_entry_changes(
        env: Path, tmp_path: Path, reference_servers: ReferenceServers) -> None:
    write(env / ".mcp.json", {"clock": time_server(reference_servers)})
    app = chat(env, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ProjectTrustScreen) and "trust all" in screen_text(app))
        text = screen_text(app)
        assert "would add 1 MCP server." in text and "mcp_server_time --local-timezone UTC" in text
        assert "from .mcp.json" in text  # named from the workspace
        assert app.agent is None  # asked before the agent is built
        await pilot.press("y")
        await until(pilot, lambda: "1 MCP server" in screen_text(app))

    again = chat(env, tmp_path)
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "1 MCP server" in screen_text(again))  # approved: connects, no question
        assert not isinstance(again.screen, ProjectTrustScreen)

    write(env / ".mcp.json", {"clock": time_server(reference_servers, "--verbose")})
    changed = chat(env, tmp_path)
    async with changed.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "clock  [changed since you trusted it]" in screen_text(changed))
        assert isinstance(changed.screen, ProjectTrustScreen)
        await pilot.press("escape")
        await until(pilot, lambda: "project MCP server clock not trusted: left off for this session"
                    in screen_text(changed))
        assert changed.agent is not None and changed.agent.mcp is not None
        assert [status.name for status in changed.agent.mcp.statuses()] == []  # not started
        await pilot.press(*"/mcp", "enter")
        await until(pilot, lambda: "clock  not trusted: left off (t trusts it" in screen_text(changed))
        assert isinstance(changed.screen, McpScreen)

    declined = chat(env, tmp_path)  # a "no" holds for its session only: asked again
    async with declined.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(declined.screen, ProjectTrustScreen))
        await pilot.press("n")
        await until(pilot, lambda: declined.agent is not None)


async def test_a_server_prompt_runs_as_a_slash_command_and_a_resource_is_attached(
        env: Path, tmp_path: Path, reference_servers: ReferenceServers) -> None:
    write(tmp_path / "config" / "mcp.json", {"everything": reference_servers.everything()})
    app = chat(env, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "1 MCP server" in screen_text(app))
        await pilot.press(*"/help", "enter")
        await until(pilot, lambda: "/mcp__everything__" in screen_text(app))
        await pilot.press(*"/mcp__everything__args-prompt Paris state=Texas", "enter")
        await until(pilot, lambda: len(app.agent.messages) >= 2)
        first = app.agent.messages[0]
        sent = " ".join(getattr(part, "text", "") for part in first.parts)
        assert "/mcp__everything__" not in sent and "Paris" in sent and "Texas" in sent
        await until(pilot, lambda: not app.busy)
        await pilot.press(*"read @everything:demo://resource/static/document/archit")
        await pilot.pause()
        await pilot.press("tab")  # completed like a file
        uri = "everything:demo://resource/static/document/architecture.md"
        await until(pilot, lambda: app.prompt.text == f"read @{uri} ")
        await pilot.press("enter")
        await until(pilot, lambda: len(app.agent.messages) >= 4)
        await until(pilot, lambda: f"{uri} (" in screen_text(app))  # the notice of what was attached
