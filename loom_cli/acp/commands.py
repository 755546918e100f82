"""Custom slash commands and skills in an editor: offered as the session's commands, and
run when a prompt names one (as `loom run` runs them); the chat's own commands are not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .sdk import AvailableCommand, AvailableCommandsUpdate

if TYPE_CHECKING:
    from loom_engine.agent import Agent
    from loom_engine.commands.invoke import Invocation


def _builtin_names() -> frozenset[str]:
    from ..tui.commands.registry import BUILTIN_NAMES  # the chat's table (no UI library imported)

    return BUILTIN_NAMES


def commands_update(agent: Agent) -> AvailableCommandsUpdate:
    """The user's custom commands and the skills they may run, as the chat's / menu lists them."""
    from ..slash_commands import discover_commands
    from ..tui.commands.custom import custom_entries

    entries = custom_entries(agent, discover_commands(agent.workspace.root, _builtin_names()))
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[
        AvailableCommand(name=name, description=description or name) for name, description in entries])


class ChatOnlyCommand(ValueError):
    """``/name`` is one of the chat's own commands (/model, /clear…): nothing to run here."""


def invocation_of(agent: Agent, text: str) -> Invocation | None:
    """The custom command or skill ``text`` runs, or None (plain text: a path like
    ``/etc/hosts`` stays a prompt). ChatOnlyCommand for the chat's own commands."""
    if not text.startswith("/"):
        return None
    from loom_engine.commands.catalog import CommandError

    from ..slash_commands import invocation_for, parse_command

    builtins = _builtin_names()
    parsed = parse_command(text)
    if parsed is not None and parsed.name in builtins:
        raise ChatOnlyCommand(f"/{parsed.name} is a command of the chat (`loom`); an editor session does not "
                              "run it (its modes and model are the editor's menus)")
    try:
        return invocation_for(agent, text, builtins)
    except CommandError as error:
        raise ChatOnlyCommand(str(error)) from None
