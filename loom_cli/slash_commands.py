"""What ``/name args`` means outside the chat's own commands, for the chat and `loom run`.

Order: the chat's built-in commands (``BUILTIN_NAMES``), then the MCP servers'
prompts (``/mcp__…``), then the user's custom commands, then the skills the user may
run. A custom command named like a built-in is never run (a warning at start says so).
Kept free of Textual: `loom run` and bootstrap use it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.permissions.modes import MODES

if TYPE_CHECKING:
    from loom_engine.commands.catalog import CommandCatalog
    from loom_engine.commands.invoke import Invocation

# The chat's own commands, with what the / menu and /help say of each.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("help", "commands and keys"),
    ("clear", "start a new session"),
    ("compact", "summarise the conversation now  [focus]"),
    ("model", "show or switch the model  [name]"),
    ("cost", "tokens and cost of this session"),
    ("skills", "list the available skills"),
    ("resume", "resume an earlier session of this workspace  [id]"),
    ("rewind", "go back to before a prompt: the files, the conversation or both (Esc Esc)"),
    ("mode", f"show or set the permission mode  [{'|'.join(MODES)}]"),
    ("permissions", "the permission rules by layer: add and remove"),
    ("mcp", "MCP servers: state, tools; reconnect, log in · @server:uri attaches a resource"),
    ("hooks", "the hooks: event, matcher, command, file, trusted or not; problems"),
    ("agents", "the custom sub-agents: source, tools; agent files not used"),
    ("sandbox", "whether commands run in the OS sandbox, by what (or why not); what they may write and read"),
    ("exit", "quit Loom"),
)
# Their names (and the alias /quit): a custom command or skill never takes one.
BUILTIN_NAMES = frozenset({name for name, _ in COMMANDS} | {"quit"})


def discover_commands(workspace_root: Path) -> CommandCatalog:
    from loom_engine.commands.catalog import CommandCatalog
    from loom_engine.paths import config_dir

    return CommandCatalog.discover(workspace_root, user_config_dir=config_dir(), reserved=BUILTIN_NAMES)


def invocation_for(agent: Any, text: str, commands: CommandCatalog | None = None) -> Invocation | None:
    """The custom command or skill ``text`` runs with this agent, or None (plain text, a
    built-in, or a name nothing has)."""
    from loom_engine.commands.invoke import resolve, split_line

    if split_line(text) is None:
        return None
    workspace = getattr(agent, "workspace", None)
    if commands is None and workspace is not None:
        commands = discover_commands(Path(workspace.root))
    return resolve(text, commands, getattr(agent, "skills", None), BUILTIN_NAMES)


def can_run(agent: Any) -> bool:
    """Whether the agent has what a command's expansion uses (stand-in agents do not)."""
    return all(hasattr(agent, name) for name in ("attach", "registry", "bus", "set_model", "identity"))
