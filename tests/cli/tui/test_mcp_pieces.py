"""The chat's MCP pieces on their own: status words, the permission preview, completion of
@server:uri, /help's prompts, and the /mcp screen against real servers."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Static

from loom_cli.tui.commands.registry import help_text
from loom_cli.tui.completion import match_mentions
from loom_cli.tui.mcp_chat import summary
from loom_cli.tui.mcp_screens import McpScreen
from loom_cli.tui.permission_prompt import describe_request, mcp_preview, preview_widget
from loom_cli.tui.status_bar import StatusInfo, status_text
from loom_engine.events import PermissionRequested
from loom_engine.mcp.config import ServerConfig, parse_server
from loom_engine.mcp.status import ServerStatus
from tests.cli.tui.helpers import screen_text
from tests.doubles.mcp_servers import ReferenceServers


def server(name: str, state: str, reason: str = "") -> ServerStatus:
    config = ServerConfig(name=name, transport="stdio", source=Path("/x/mcp.json"), scope="user", command="srv")
    return ServerStatus(config, state, reason)  # type: ignore[arg-type]


def test_status_words_say_connecting_then_how_many_and_what_failed() -> None:
    assert summary([]) == ""
    assert summary([server("a", "connected"), server("b", "connecting")]) == "MCP: connecting…"
    assert summary([server("a", "connected"), server("b", "connected")]) == "2 MCP servers"
    assert summary([server("a", "connected"), server("b", "failed", "exited")]) == "1 MCP server · 1 failed"
    assert summary([server("a", "failed"), server("b", "disabled")]) == "MCP: 1 failed"
    assert summary([server("a", "needs_login")]) == "MCP: 1 needs login"
    line = status_text(StatusInfo(model="claude-x", mode="default", mcp="2 MCP servers")).plain
    assert "claude-x · default (shift+tab) · 2 MCP servers" in line


def test_the_mcp_screen_names_claude_codes_file_for_its_servers() -> None:
    from loom_cli.tui.mcp_screens import server_text

    mine = server("mine", "connected")
    claude = ServerStatus(ServerConfig(name="clock", transport="stdio", source=Path.home() / ".claude.json",
                                       scope="claude-local", command="srv"), "connected")
    assert "srv  [user]" in server_text(mine).plain
    assert "srv  [~/.claude.json: local]" in server_text(claude).plain


def test_the_permission_question_shows_server_tool_and_arguments_as_json() -> None:
    request = PermissionRequested(request_id="r", call_id="c", tool="mcp__git__git_commit",
                                  input={"message": "fix", "repo_path": "/w"}, reason="asks",
                                  preview={"kind": "mcp", "server": "git", "tool": "git_commit",
                                           "arguments": '{\n  "message": "fix",\n  "repo_path": "/w"\n}'})
    assert describe_request(request) == "the MCP server git wants to run its tool git_commit"
    assert preview_widget(request).id == "mcp"
    text = mcp_preview(request.preview or {}).plain
    assert "server git" in text and "tool git_commit" in text
    assert '\n  "message": "fix",\n  "repo_path": "/w"' in text


def test_at_server_colon_completes_resources_with_the_files() -> None:
    resources = [("everything:demo://resource/static/document/features.md", "features.md"),
                 ("time:time://zones", "zones")]
    found = match_mentions(["src/app.py", "everything.txt"], resources, "every")
    assert [c.label for c in found] == ["everything.txt", "everything:demo://resource/static/document/features.md"]
    found = match_mentions(["src/app.py"], resources, "time:")
    assert [c.value for c in found] == ["@time:time://zones "]


def test_help_lists_the_mcp_prompts() -> None:
    text = help_text([("mcp__everything__simple-prompt", "A prompt without arguments  (everything)")])
    assert "MCP prompts" in text and "/mcp__everything__simple-prompt  A prompt without arguments" in text


class ScreenApp(App[None]):
    def __init__(self, screen: McpScreen) -> None:
        super().__init__()
        self.mcp_screen = screen

    def compose(self) -> ComposeResult:
        yield Static("chat")

    def on_mount(self) -> None:
        self.push_screen(self.mcp_screen)


def screen_lines(app: App[None]) -> str:
    return screen_text(app)  # type: ignore[arg-type]  # reads only the screen every App has


async def test_mcp_screen_lists_real_servers_with_their_states(reference_servers: ReferenceServers,
                                                               tmp_path: Path) -> None:
    from loom_engine.mcp.manager import McpManager

    env: dict[str, str] = {}
    configs = [parse_server("time", reference_servers.python_server("mcp_server_time", "--local-timezone", "UTC"),
                            tmp_path / "mcp.json", "user", env),
               parse_server("broken", {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
                            tmp_path / ".mcp.json", "project", env)]
    manager = McpManager(configs, connect_timeout_s=60)
    app = ScreenApp(McpScreen(manager))
    async with app.run_test(size=(120, 40)) as pilot:
        manager.start()
        await manager.wait_ready(60)
        await pilot.pause()
        text = screen_lines(app)
        assert "time  connected" in text and "get_current_time" in text and "convert_time" in text
        assert "broken  failed: " in text and "[project]" in text
        assert text.index("broken") < text.index("time  connected")  # sorted by name
        await pilot.press("r")  # the first, chosen: the failed one
        await pilot.pause()
        assert "reconnecting broken…" in screen_lines(app)
        await pilot.press("down", "l")
        await pilot.pause()
        assert "time runs on this machine: it needs no login" in screen_lines(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, McpScreen)
        await manager.aclose()


def test_the_trust_question_names_the_environment_an_entry_passes_on() -> None:
    from loom_cli.tui.mcp_screens import pending_text

    entry = {"type": "http", "url": "https://mcp.example.com/${REGION:-eu}",
             "headers": {"Authorization": "Bearer ${ANTHROPIC_API_KEY}"}}
    risky = parse_server("remote", entry, Path("/repo/.mcp.json"), "project",
                         {"ANTHROPIC_API_KEY": "sk-ant-secret-0123456789"})
    plain = parse_server("clock", {"command": "clock-server"}, Path("/repo/.mcp.json"), "project", {})
    assert risky.environment_read() == ("ANTHROPIC_API_KEY", "REGION")
    assert plain.environment_read() == ()
    text = pending_text([risky, plain]).plain
    assert "passes it your $ANTHROPIC_API_KEY, $REGION" in text
    assert text.count("passes it your") == 1
    assert "sk-ant-secret" not in text
