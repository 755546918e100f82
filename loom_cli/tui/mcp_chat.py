"""The chat's side of MCP: starting the servers, the status-bar words, and server prompts
as slash commands.

The manager comes with the agent (``agent.mcp``; None when no server is configured). It
starts once the agent is installed, which is after the first frame: the ``mcp`` package
is imported by the manager in a thread, so neither the first frame nor typing waits for
it. Everything here reads the manager through the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from loom_engine.mcp.names import is_prompt_command

from ..wording import plural

if TYPE_CHECKING:
    from loom_engine.mcp.manager import McpManager, ServerStatus
    from loom_engine.mcp.status import McpPromptInfo, McpResourceInfo

    from ..chat_agent import ChatAgent
    from .options import BuiltAgent


def manager_of(agent: ChatAgent | None) -> McpManager | None:
    """The agent's MCP servers, or None (no agent yet, or no server configured)."""
    return agent.mcp if agent is not None else None


def summary(statuses: Sequence[ServerStatus]) -> str:
    """The status bar's words: "MCP: connecting…", "2 MCP servers", "2 MCP servers · 1 failed"."""
    live = [s for s in statuses if s.state != "disabled"]
    if not live:
        return ""
    if any(s.state == "connecting" for s in live):
        return "MCP: connecting…"
    connected = sum(s.state == "connected" for s in live)
    failed = sum(s.state == "failed" for s in live)
    login = sum(s.state == "needs_login" for s in live)
    parts = [plural(connected, "MCP server")] if connected else []
    if failed:
        parts.append(f"{failed} failed")
    if login:
        parts.append(f"{login} needs login" if login == 1 else f"{login} need login")
    text = " · ".join(parts)
    return text if connected else f"MCP: {text}"


class McpHost(Protocol):
    """What the chat's MCP side uses of the app."""

    agent: ChatAgent | None


def start_mcp(host: McpHost, built: BuiltAgent, *, show: Callable[[str], None]) -> None:
    """Start the agent's servers (call once the agent is installed, after the first
    frame) and keep the status bar's words current through ``show``. The project's servers
    were asked about before the agent was built, with the rest of what the project adds
    (:mod:`.trust_screen`): those not trusted are not in the manager."""
    manager = built.agent.mcp
    if manager is None:
        return

    def changed(_status: object) -> None:
        if manager_of(host.agent) is manager:  # a replaced agent's servers say nothing more
            show(summary(manager.statuses()))

    manager.subscribe(changed)
    manager.start()
    show(summary(manager.statuses()))


# --- server prompts as slash commands ---------------------------------------------------


def prompt_commands(agent: ChatAgent | None) -> list[tuple[str, str]]:
    """(name, description) of each connected server prompt, for /help and completion."""
    manager = manager_of(agent)
    if manager is None:
        return []
    from loom_engine.mcp.prompts import command_name

    return [(command_name(p), _prompt_help(p)) for p in manager.prompts()]


def _prompt_help(prompt: McpPromptInfo) -> str:
    usage = " ".join(f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in prompt.arguments)
    description = (prompt.description or f"prompt of {prompt.server}").strip().splitlines()
    head = description[0] if description else ""
    return f"{head}  {usage}".rstrip() + f"  ({prompt.server})"


async def expand_prompt_command(agent: ChatAgent, text: str) -> str | None:
    """The server's prompt text for ``/mcp__server__prompt args``; None when ``text``
    names no server prompt. ValueError (one line) for bad arguments or a failed call."""
    manager = manager_of(agent)
    if manager is None or not is_prompt_command(text):
        return None
    from loom_engine.mcp.prompts import parse_prompt_command, run_prompt_command

    command = parse_prompt_command(text, manager.prompts())
    if command is None:
        return None
    try:
        return await run_prompt_command(manager, command)
    except Exception as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"the MCP prompt {command.info.name} of {command.info.server} failed: {reason}") from None


# --- @server:uri resources ---------------------------------------------------------------


def resources_of(agent: ChatAgent | None) -> tuple[McpResourceInfo, ...]:
    manager = manager_of(agent)
    return manager.resources() if manager is not None else ()


def resource_mentions_of(agent: ChatAgent | None) -> list[tuple[str, str]]:
    """("server:uri", name) of each resource the connected servers list, for completion."""
    return [(f"{r.server}:{r.uri}", r.name) for r in resources_of(agent)]
