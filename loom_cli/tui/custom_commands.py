"""Custom commands and skills in the chat: the / menu's entries, /help's lines, and
sending ``/name args`` (the user's turn expands it, see user_turns)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom_engine.commands.catalog import CommandCatalog

    from .app import LoomApp
    from .commands import ParsedCommand

# A skill's description can be a paragraph; the menu and /help show its start.
SKILL_HELP_CHARS = 70


def not_ready(app: LoomApp) -> str:
    return ((app.agent_error and f"the agent is not available: {app.agent_error}")
            or "the agent is still loading; try again in a moment")


def custom_command(app: LoomApp, command: ParsedCommand) -> None:
    """``/name args`` naming a custom command or a skill: sent like a prompt (the user's
    turn expands it, see user_turns); any other name is unknown."""
    from loom_cli.slash_commands import discover_commands, invocation_for
    from loom_engine.commands.catalog import CommandError

    from .paste import Draft

    try:
        invocation = invocation_for(app.agent, command.text, discover_commands(Path(app.workspace_root)))
    except CommandError as error:
        app.output(f"{error} · not run")
        return
    if invocation is None and app.agent is None:
        app.output(not_ready(app))  # it may be a skill: the agent knows them
        return
    if invocation is None:
        app.output(f"unknown command /{command.name} · /help lists the commands")
        return
    app.prompt_queue.add(Draft(command.text))
    app.send_queued()


class CustomCommandMenu:
    """The custom commands and skills the / menu offers, read again only when a command
    file is added, removed or changed (the menu asks on each key)."""

    def __init__(self, workspace_root: Path) -> None:
        self._root = workspace_root
        self._seen: tuple[tuple[str, int], ...] | None = None
        self._commands: CommandCatalog | None = None

    def catalog(self) -> CommandCatalog:
        from loom_cli.slash_commands import discover_commands
        from loom_engine.commands.catalog import command_places, signature
        from loom_engine.paths import config_dir

        seen = signature(command_places(self._root, config_dir()))
        if self._commands is None or seen != self._seen:
            self._commands, self._seen = discover_commands(self._root), seen
        return self._commands

    def entries(self, agent: Any) -> list[tuple[str, str]]:
        return custom_entries(agent, self._root, self.catalog())


def custom_entries(agent: Any, workspace_root: Path, commands: CommandCatalog | None = None
                   ) -> list[tuple[str, str]]:
    """(name, help) of each custom command, then of each skill the user may run that no
    command shadows: the description, and the argument hint in brackets."""
    from loom_cli.slash_commands import discover_commands

    if commands is None:
        commands = discover_commands(workspace_root)
    out = [(c.name, f"{c.description}  {c.argument_hint}".rstrip()) for c in commands]
    skills = getattr(agent, "skills", None)
    for skill in skills if isinstance(skills, Iterable) else ():
        name = str(getattr(skill, "name", "") or "")
        if not name or name in commands or not getattr(skill, "user_invocable", True):
            continue
        description = " ".join(str(getattr(skill, "description", "") or "").split())
        if len(description) > SKILL_HELP_CHARS:
            description = description[:SKILL_HELP_CHARS - 1].rstrip() + "…"
        out.append((name, f"{description}  (skill)"))
    return out
