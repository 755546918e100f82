"""What ``/name args`` means outside the chat's own commands, for the chat and `loom run`.

Order: the chat's built-in commands (``BUILTIN_NAMES``), then the MCP servers'
prompts (``/mcp__…``), then the user's custom commands, then the skills the user may
run. A custom command named like a built-in is never run (a warning at start says so).
Kept free of Textual: `loom run` and bootstrap use it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom_engine.commands.catalog import CommandCatalog
    from loom_engine.commands.invoke import Invocation

# The chat's own commands (loom_cli.tui.commands.COMMANDS, and its alias /quit).
BUILTIN_NAMES = frozenset({"help", "clear", "compact", "model", "cost", "skills", "resume", "mode",
                           "permissions", "mcp", "exit", "quit"})


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
