"""/mode and /permissions: the permission mode, and the rules by layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom_engine.permissions.modes import MODES

from ...slash_commands import ParsedCommand, SlashCommand

if TYPE_CHECKING:
    from ..chat_host import ChatHost

# Said when the agent has no permission manager (a session built without one).
NO_MANAGER = "No permission manager: every tool call is allowed."


def mode(host: ChatHost, command: ParsedCommand) -> None:
    arg = command.arg
    if not arg:
        host.output(f"permission mode: {host.mode}  (modes: {', '.join(MODES)})")
    elif arg not in MODES:
        host.output(f"unknown mode {arg!r}; choose one of {', '.join(MODES)}")
    else:
        if arg == "bypass":
            host.bypass_allowed = True  # asked for by name: Shift+Tab may come back to it
        if host.set_mode(arg):
            host.output(f"permission mode: {host.mode}")


def permissions(host: ChatHost, _command: ParsedCommand) -> None:
    """The rules by layer, to add and remove (one line when there is no manager)."""
    agent = host.agent
    assert agent is not None  # needs_agent: the registry checked
    manager = agent.permissions
    if manager is None:
        host.output(NO_MANAGER)
        return
    from ..permissions_screen import PermissionsScreen

    host.push_screen(PermissionsScreen(manager))


MODE = SlashCommand("mode", f"show or set the permission mode  [{'|'.join(MODES)}]", mode,
                    usage=f"/mode [{'|'.join(MODES)}]", max_words=1)
PERMISSIONS = SlashCommand("permissions", "the permission rules by layer: add and remove", permissions)
