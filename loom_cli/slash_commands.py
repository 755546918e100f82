"""The chat's slash commands as data, and what ``/name args`` means outside them.

One :class:`SlashCommand` per built-in command holds every fact about it: its name and
aliases, what the / menu and /help say of it, its usage line, how many words it takes
and what runs it. The entries themselves live beside their handlers in
``loom_cli.tui.commands``; :class:`SlashRegistry` gathers them, and /help, the / menu,
usage errors and the reserved names are all read from it.

Order of ``/name args``: the chat's built-in commands, then the MCP servers' prompts
(``/mcp__…``), then the user's custom commands, then the skills the user may run. A
custom command named like a built-in is never run (a warning at start says so).
Kept free of Textual: `loom run` and bootstrap use it too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loom_engine.commands.catalog import CommandCatalog
    from loom_engine.commands.invoke import Invocation

    from .chat_agent import ChatAgent
    from .tui.chat_host import ChatHost


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    arg: str
    text: str = field(default="", compare=False)  # as typed (an MCP prompt's name keeps its case)


def parse_command(text: str) -> ParsedCommand | None:
    """A slash command, or None when the text is a prompt (``/path/like`` text is a prompt)."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "/" in head:
        return None
    return ParsedCommand(head.lower(), rest.strip(), stripped)


# What a command's name looks like; a first word of another shape (``/.env``, ``/42``)
# is text for the model.
COMMAND_NAME = re.compile(r"[a-z][\w:.-]*")


def nearest_names(name: str, known: Iterable[str], most: int = 3) -> list[str]:
    """The known names ``name`` may be a typo of, closest first: those it starts or ends
    (``/rev`` → ``/review``), then the similar ones."""
    names = sorted(set(known))
    starts = [k for k in names if k.startswith(name) or name.startswith(k)]
    similar = difflib.get_close_matches(name, names, n=most, cutoff=0.7)
    return list(dict.fromkeys([*similar, *starts]))[:most]


def unknown_command_line(parsed: ParsedCommand, known: Iterable[str],
                         listed_by: str = "/help lists them") -> str | None:
    """The one-line notice for ``/name`` when no command, skill or prompt has that name;
    None when the text is a prompt after all. The rule: a first word shaped like a
    command name (a letter, then letters, digits or ``_:.-``) that is not a path on this machine is a command
    the user meant — ``/reviw``, ``/frobnicate now`` get the notice and are not sent —
    while ``/usr/bin/foo is broken``, ``/tmp is full`` and ``/.env leaks`` are prompts
    (Claude Code draws the same line, in the chat and in ``claude -p``). ``listed_by``:
    where the user finds the names."""
    head = parsed.text[1:].split(maxsplit=1)[0] if parsed.text.startswith("/") else parsed.name
    if not COMMAND_NAME.fullmatch(parsed.name) or _is_path("/" + head):
        return None
    near = nearest_names(parsed.name, known)
    hint = f" (did you mean {' or '.join('/' + n for n in near)}?)" if near else ""
    return f"unknown command /{parsed.name}{hint} — {listed_by}"


def _is_path(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL
        return False


# What carries a command out: given the chat and the command as typed. A coroutine is
# awaited by the chat before the next prompt is read.
Handler = Callable[["ChatHost", ParsedCommand], Awaitable[None] | None]


@dataclass(frozen=True)
class SlashCommand:
    """One built-in command: everything the chat knows of it, in one place."""

    name: str
    description: str  # what the / menu and /help say of it
    handler: Handler
    usage: str = ""  # the usage line; "" means just ``/name``
    # The most words it takes (None: free text). A command given more is refused with its
    # usage and not run: "/clear ost" is a typo (or a burst of keys gone wrong), never a
    # reason to wipe the conversation.
    max_words: int | None = 0
    needs_agent: bool = True  # refused with "still loading" (or the agent's error) until it is there
    aliases: frozenset[str] = frozenset()


class SlashRegistry:
    """The built-in commands in the order /help and the / menu show them."""

    def __init__(self, commands: Iterable[SlashCommand]) -> None:
        self.commands = tuple(commands)
        by_name: dict[str, SlashCommand] = {}
        for command in self.commands:
            for name in (command.name, *sorted(command.aliases)):
                if name in by_name:
                    raise ValueError(f"/{name} is registered twice")
                by_name[name] = command
        self._by_name: Mapping[str, SlashCommand] = by_name

    @property
    def names(self) -> frozenset[str]:
        """Every name a built-in answers to, aliases included: a custom command or skill
        never takes one."""
        return frozenset(self._by_name)

    def find(self, name: str) -> SlashCommand | None:
        return self._by_name.get(name)

    def menu_entries(self) -> list[tuple[str, str]]:
        """(name, description) of each command, for the / menu and /help."""
        return [(command.name, command.description) for command in self.commands]

    def usage_problem(self, parsed: ParsedCommand) -> str | None:
        """The usage line when ``parsed`` has arguments its command does not take, else None."""
        command = self.find(parsed.name)
        if command is None or command.max_words is None or len(parsed.arg.split()) <= command.max_words:
            return None
        return f"usage: {command.usage or f'/{parsed.name}'} · not run"  # an alias as typed: /quit


def discover_commands(workspace_root: Path, reserved: frozenset[str]) -> CommandCatalog:
    """The user's custom commands; none takes a ``reserved`` (built-in) name."""
    from loom_engine.commands.catalog import CommandCatalog
    from loom_engine.paths import config_dir

    from .claude_folder import user_claude_home

    return CommandCatalog.discover(workspace_root, user_config_dir=config_dir(), reserved=reserved,
                                   claude_home=user_claude_home())


def invocation_for(agent: ChatAgent | None, text: str, reserved: frozenset[str],
                   commands: CommandCatalog | None = None) -> Invocation | None:
    """The custom command or skill ``text`` runs with this agent, or None (plain text, a
    built-in, or a name nothing has). Without an agent (still loading) only ``commands``
    are looked in: the skills are the agent's."""
    from loom_engine.commands.invoke import resolve, split_line

    if split_line(text) is None:
        return None
    if commands is None and agent is not None:
        commands = discover_commands(Path(agent.workspace.root), reserved)
    return resolve(text, commands, agent.skills if agent is not None else None, reserved)
