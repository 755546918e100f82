"""Custom commands and skills in the chat: the / menu's entries, /help's lines, and
sending ``/name args`` (the user's turn expands it, see user_turns)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...slash_commands import ParsedCommand, discover_commands, invocation_for, unknown_command_line

if TYPE_CHECKING:
    from loom_engine.commands.catalog import CommandCatalog

    from ...chat_agent import ChatAgent
    from ..chat_host import ChatHost

# A skill's description can be a paragraph; the menu and /help show its start.
SKILL_HELP_CHARS = 70


def not_ready(host: ChatHost) -> str:
    return ((host.agent_error and f"the agent is not available: {host.agent_error}")
            or "the agent is still loading; try again in a moment")


def custom_command(host: ChatHost, command: ParsedCommand, reserved: frozenset[str]) -> None:
    """``/name args`` naming a custom command or a skill: sent like a prompt (the user's
    turn expands it, see user_turns); any other name is unknown. ``reserved``: the
    built-ins' names, which no custom command takes."""
    from loom_engine.commands.catalog import CommandError

    from ..mcp_chat import prompt_commands
    from ..paste import Draft

    commands = discover_commands(Path(host.workspace_root), reserved)
    try:
        invocation = invocation_for(host.agent, command.text, reserved, commands)
    except CommandError as error:
        host.output(f"{error} · not run")
        return
    if invocation is None and host.agent is None:
        host.output(not_ready(host))  # it may be a skill: the agent knows them
        return
    if invocation is None:
        known = [*reserved, *(name for name, _ in custom_entries(host.agent, commands)),
                 *(name for name, _ in prompt_commands(host.agent))]
        unknown = unknown_command_line(command, known)
        if unknown is not None:
            host.output(unknown)  # not sent: a mistyped command is no question for the model
            return
        # A path or other text that only starts with "/": a prompt for the model.
    host.prompt_queue.add(Draft(command.text))
    host.send_queued()


class CustomCommandMenu:
    """The custom commands and skills the / menu offers, read again only when a command
    file is added, removed or changed (the menu asks on each key)."""

    def __init__(self, workspace_root: Path, reserved: frozenset[str]) -> None:
        self._root = workspace_root
        self._reserved = reserved
        self._seen: tuple[tuple[str, int], ...] | None = None
        self._commands: CommandCatalog | None = None
        from ...claude_folder import user_claude_home

        self._claude_home = user_claude_home()

    def catalog(self) -> CommandCatalog:
        from loom_engine.commands.catalog import command_places, signature
        from loom_engine.paths import config_dir

        seen = signature(command_places(self._root, config_dir(), self._claude_home))
        if self._commands is None or seen != self._seen:
            self._commands, self._seen = discover_commands(self._root, self._reserved), seen
        return self._commands

    def entries(self, agent: ChatAgent | None) -> list[tuple[str, str]]:
        return custom_entries(agent, self.catalog())


def custom_entries(agent: ChatAgent | None, commands: CommandCatalog) -> list[tuple[str, str]]:
    """(name, help) of each custom command, then of each skill the user may run: the
    description, and the argument hint in brackets. A skill a command of the same name
    hides from ``/name`` is listed as ``/skill:name``, which runs it."""
    from loom_engine.commands.invoke import SKILL_PREFIX

    out = [(c.name, f"{c.description}  {c.argument_hint}".rstrip()) for c in commands]
    skills = agent.skills if agent is not None else None
    for skill in skills if skills is not None else ():
        if not skill.name or not skill.user_invocable:
            continue
        description = " ".join(skill.description.split())
        if len(description) > SKILL_HELP_CHARS:
            description = description[:SKILL_HELP_CHARS - 1].rstrip() + "…"
        # /skill:name when a command has the name (listed above it): the prefix says it all.
        out.append((SKILL_PREFIX + skill.name if skill.name in commands else skill.name, f"{description}  (skill)"))
    return out
