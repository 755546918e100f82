"""The chat's built-in commands in one table, /help made from it, and carrying a command out.

Every fact about a built-in is in its `SlashCommand` entry (in the module of its job);
the / menu, /help, usage errors and the names custom commands may not take are read
from `REGISTRY`. A name that is no built-in is an MCP server's prompt (``/mcp__…``) or a
custom command or skill.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loom_engine.mcp.names import is_mcp_name

from ...slash_commands import ParsedCommand, SlashCommand, SlashRegistry, discover_commands
from . import info, mcp, memory, model, permissions, rewind, session
from .custom import custom_command, custom_entries, not_ready

if TYPE_CHECKING:
    from ..chat_host import ChatHost

KEYS_HELP = (
    ("Enter", "send (while a run streams, the message is queued)"),
    ("Shift+Enter / Ctrl+J", "newline"),
    ("Up / Down", "prompt history; Up on an empty prompt edits the last queued message"),
    ("Ctrl+R", "search the prompt history"),
    ("Ctrl+G", "edit the prompt in $VISUAL / $EDITOR"),
    ("Esc", "interrupt the running turn (queued messages come back to the prompt)"),
    ("Esc Esc", "on an empty prompt with no run going: /rewind"),
    ("Ctrl+C", "interrupt; clear the prompt; on an empty prompt press twice to quit; copies selected text"),
    ("Ctrl+D", "quit (during a run it asks first)"),
    ("Shift+Tab", "cycle the permission mode"),
    ("Ctrl+O", "expand / collapse tool output and long pastes (a click on a paste too)"),
    ("PgUp / PgDn", "scroll the transcript (the mouse wheel too)"),
    ("@path", "attach a workspace file's content (@path:10-40 a range; Tab completes)"),
    ("!command", "run a shell command yourself; its output joins the conversation"),
)


def help_text(prompts: Sequence[tuple[str, str]] = (), custom: Sequence[tuple[str, str]] = ()) -> str:
    """The built-in commands, the MCP servers' prompts (``prompts``: name and help), the
    custom commands and skills (``custom``) and the keys."""
    commands = REGISTRY.menu_entries()
    width = max(len(name) for name, _ in commands) + 2
    lines = ["Commands:"]
    lines += [f"  /{name:<{width}}{text}" for name, text in commands]
    if prompts:
        lines.append("MCP prompts (the server's text becomes your prompt):")
        lines += [f"  /{name}  {text}" for name, text in prompts]
    if custom:
        lines.append("Your commands and skills (their text becomes your prompt):")
        lines += [f"  /{name}  {text}" for name, text in custom]
    lines.append("Keys:")
    key_width = max(len(k) for k, _ in KEYS_HELP) + 2
    lines += [f"  {key:<{key_width}}{text}" for key, text in KEYS_HELP]
    return "\n".join(lines)


def show_help(host: ChatHost, _command: ParsedCommand) -> None:
    from ..mcp_chat import prompt_commands

    custom = custom_entries(host.agent, discover_commands(Path(host.workspace_root), BUILTIN_NAMES))
    host.output(help_text(prompt_commands(host.agent), custom))


def quit_now(host: ChatHost, _command: ParsedCommand) -> None:
    host.action_quit_now()


# In the order /help and the / menu show them.
REGISTRY = SlashRegistry((
    SlashCommand("help", "commands and keys", show_help, needs_agent=False),
    session.CLEAR,
    session.COMPACT,
    session.CONTINUE,
    model.MODEL,
    info.COST,
    info.SKILLS,
    memory.MEMORY,
    session.RESUME,
    rewind.REWIND,
    permissions.MODE,
    permissions.PERMISSIONS,
    mcp.MCP,
    info.HOOKS,
    info.AGENTS,
    info.SANDBOX,
    SlashCommand("exit", "quit Loom", quit_now, needs_agent=False, aliases=frozenset({"quit"})),
))
# The names (aliases too) a custom command or skill never takes.
BUILTIN_NAMES = REGISTRY.names


async def run_command(host: ChatHost, parsed: ParsedCommand) -> None:
    """Carry out ``parsed``: a built-in, an MCP server's prompt, or a custom command or skill."""
    command = REGISTRY.find(parsed.name)
    if command is None:
        if not is_mcp_name(parsed.name):
            custom_command(host, parsed, BUILTIN_NAMES)  # it waits in the queue for the agent, as a prompt does
        elif host.agent is None:
            host.output(not_ready(host))
        else:
            mcp.prompt_command(host, parsed)
        return
    problem = REGISTRY.usage_problem(parsed)
    if problem is not None:
        host.output(problem)
    elif command.needs_agent and host.agent is None:
        host.output(not_ready(host))
    else:
        done = command.handler(host, parsed)
        if inspect.isawaitable(done):
            await done
