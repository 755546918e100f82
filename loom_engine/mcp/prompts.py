"""Server prompts as slash commands: ``/mcp__<server>__<prompt> args…``.

Arguments are ``name=value`` words, or plain words given to the prompt's arguments in
the order the server lists them (quote a value with spaces). What the server returns
becomes the text of the user's prompt.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .manager import McpManager, McpPromptInfo
from .names import tool_name
from .results import resource_text

if TYPE_CHECKING:
    from mcp.types import GetPromptResult


@dataclass(frozen=True)
class PromptCommand:
    info: McpPromptInfo
    arguments: dict[str, str] = field(default_factory=dict)


def command_name(prompt: McpPromptInfo) -> str:
    """The slash command's name, without the slash (cleaned like tool names)."""
    return tool_name(prompt.server, prompt.name)


def find_prompt(text: str, prompts: Sequence[McpPromptInfo]) -> McpPromptInfo | None:
    """The prompt a ``/mcp__…`` line names, or None when it names none."""
    if not text.startswith("/"):
        return None
    head = text[1:].split(None, 1)[0] if text[1:].strip() else ""
    return next((p for p in prompts if command_name(p) == head), None)


def parse_prompt_command(text: str, prompts: Sequence[McpPromptInfo]) -> PromptCommand | None:
    """None when ``text`` is no prompt command; ValueError (one line) when its
    arguments do not fit the prompt."""
    info = find_prompt(text, prompts)
    if info is None:
        return None
    rest = text[1:].split(None, 1)[1] if len(text[1:].split(None, 1)) > 1 else ""
    try:
        words = shlex.split(rest)
    except ValueError as error:
        raise ValueError(f"/{command_name(info)}: {error}") from None
    names = [a.name for a in info.arguments]
    values: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in names:
            values[key] = value
        else:
            positional.append(word)
    free = [n for n in names if n not in values]
    if len(positional) > len(free):
        raise ValueError(f"/{command_name(info)} takes {len(names)} argument(s): {' '.join(names) or 'none'}")
    values.update(zip(free, positional, strict=False))
    missing = [a.name for a in info.arguments if a.required and a.name not in values]
    if missing:
        usage = " ".join(f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in info.arguments)
        raise ValueError(f"/{command_name(info)} needs {', '.join(missing)} (usage: /{command_name(info)} {usage})")
    return PromptCommand(info, values)


def prompt_text(result: GetPromptResult) -> str:
    """The prompt's messages as the text of one user prompt."""
    parts: list[str] = []
    for message in result.messages:
        content: Any = message.content
        kind = getattr(content, "type", "")
        if kind == "text":
            text = content.text
        elif kind == "resource":
            text = resource_text(content.resource)
        else:
            text = f"[{kind} content, not shown]"
        parts.append(text if message.role == "user" else f"({message.role}) {text}")
    return "\n\n".join(parts)


async def run_prompt_command(manager: McpManager, command: PromptCommand) -> str:
    result = await manager.get_prompt(command.info.server, command.info.name, command.arguments)
    return prompt_text(result)
