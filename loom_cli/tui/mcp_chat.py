"""The chat's side of MCP: starting the servers, the status-bar words, the question about
a project's servers, and server prompts as slash commands.

The manager comes with the agent (``agent.mcp``; None when no server is configured). It
starts once the agent is installed, which is after the first frame: the ``mcp`` package
is imported by the manager in a thread, so neither the first frame nor typing waits for
it. Everything here reads the manager through the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from loom_engine.mcp.names import is_prompt_command

from ..wording import plural

if TYPE_CHECKING:
    from loom_engine.mcp.config import ServerConfig
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


@dataclass(frozen=True)
class PendingAnswer:
    """The user's answer about the project's servers: True yes, False no, None not now."""

    servers: tuple[ServerConfig, ...]
    approved: bool | None


def record_answer(workspace: Path, data_dir: Path, answer: PendingAnswer) -> None:
    """Saved by each entry's hash (a changed entry asks again); runs in a thread."""
    if answer.approved is None:
        return
    from loom_cli.workspace_records import WorkspaceRecords

    records = WorkspaceRecords(data_dir)
    for server in answer.servers:
        records.decide_mcp(workspace, server.entry_hash, answer.approved)


class McpHost(Protocol):
    """What the chat's MCP side uses of the app."""

    agent: ChatAgent | None

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...

    def run_worker(self, work: Any, **kwargs: Any) -> Any: ...

    def output(self, text: str) -> None: ...


def start_mcp(host: McpHost, built: BuiltAgent, *, show: Callable[[str], None], guard_s: float = 1.0) -> None:
    """Start the agent's servers (call once the agent is installed, after the first
    frame), keep the status bar's words current through ``show``, and ask about the
    project's servers not answered yet."""
    manager = built.agent.mcp
    if manager is None:
        return

    def changed(_status: object) -> None:
        if manager_of(host.agent) is manager:  # a replaced agent's servers say nothing more
            show(summary(manager.statuses()))

    manager.subscribe(changed)
    manager.start()
    show(summary(manager.statuses()))
    pending: tuple[ServerConfig, ...] = built.mcp_plan.pending if built.mcp_plan is not None else ()
    if not pending:
        return
    from loom_engine.paths import data_dir

    from .mcp_screens import McpTrustScreen

    # Where bootstrap read the answers: the agent's workspace root, the user data dir.
    workspace = built.agent.workspace.root

    def answered(approved: bool | None) -> None:
        host.run_worker(_settle(host, manager, PendingAnswer(pending, approved), workspace, data_dir(), show),
                        group="mcp-trust", exit_on_error=False)

    host.push_screen(McpTrustScreen(pending, guard_s=guard_s), callback=answered)


async def _settle(host: McpHost, manager: McpManager, answer: PendingAnswer, workspace: Path, data_dir: Path,
                  show: Callable[[str], None]) -> None:
    names = ", ".join(s.name for s in answer.servers)
    try:
        await asyncio.to_thread(record_answer, workspace, data_dir, answer)
    except OSError as error:
        host.output(f"could not remember your answer about {names}: {error.strerror or error}")
    if answer.approved:
        for server in answer.servers:
            manager.add(server)
        show(summary(manager.statuses()))
        host.output(f"project MCP {'server' if len(answer.servers) == 1 else 'servers'} {names}: "
                    "approved, connecting (/mcp shows them)")
    elif answer.approved is False:
        host.output(f"project MCP servers left out: {names} (refused; a changed entry asks again)")
    else:
        host.output(f"project MCP servers left out for now: {names} (asked again next time)")


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
