"""/mcp (the servers' screen) and ``/mcp__server__prompt args`` (an MCP server's prompt)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...slash_commands import ParsedCommand, SlashCommand

if TYPE_CHECKING:
    from loom_engine.mcp.config import ServerConfig

    from ..chat_host import ChatHost


def mcp(host: ChatHost, _command: ParsedCommand) -> None:
    """/mcp: each server's state and what it offers, live; reconnect and log in there. The
    project's servers left out are listed too, with why."""
    from loom_cli.claude_folder import find_claude_home
    from loom_cli.mcp_setup import plan_servers
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.paths import claude_config_file, config_dir, data_dir, user_config_file

    from ..mcp_chat import manager_of
    from ..mcp_screens import McpScreen

    records = WorkspaceRecords(data_dir())
    plan = plan_servers(host.workspace_root, config_dir(), records,
                        claude_file=claude_config_file(find_claude_home(user_config_file())))
    manager = manager_of(host.agent)
    left_out = [(server, "not trusted: left off (t trusts it; Loom asks at the next start)")
                for server in plan.pending]
    left_out += [(server, "refused: left off (t trusts it)") for server in plan.refused]

    def trust(server: ServerConfig) -> str | None:
        """Record the yes (by the entry's hash, as the start-up question does) and start it."""
        if manager is None:
            return "no agent yet: try again once it is loaded"
        try:
            records.decide_mcp(host.workspace_root, server.entry_hash, True)
        except OSError as error:
            return f"could not remember the trust in {server.name}: {error.strerror or error}"
        manager.add(server)
        return None

    host.push_screen(McpScreen(manager, left_out, trust if left_out else None))


def prompt_command(host: ChatHost, command: ParsedCommand) -> None:
    """``/mcp__server__prompt args``: checked here, then sent like a prompt (the user's turn
    asks the server for the prompt's text, see user_turns)."""
    from loom_engine.mcp.prompts import parse_prompt_command

    from ..mcp_chat import manager_of
    from ..paste import Draft

    manager = manager_of(host.agent)
    try:
        parsed = parse_prompt_command(command.text, manager.prompts()) if manager is not None else None
    except ValueError as error:
        host.output(f"{error} · not run")
        return
    if parsed is None:
        host.output(f"unknown command /{command.name} · /help lists the commands and the MCP prompts")
        return
    host.prompt_queue.add(Draft(command.text))
    host.send_queued()


MCP = SlashCommand("mcp", "MCP servers: state, tools; reconnect, log in · @server:uri attaches a resource", mcp)
