"""``@server:uri`` in a prompt: the MCP resource's text goes to the model with it.

    prompt = await agent.attach(text)                  # @path mentions (files)
    prompt = await attach_resources(prompt, manager)   # @server:uri mentions

A mention names a configured server, a colon, then the resource's URI as the server
lists it (``@everything:demo://resource/static/document/features.md``). A server that
is not connected or a read that fails is named in one line instead of the content.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..attachments import Attachment, UserPrompt
from .manager import McpManager
from .results import ResultLimits, resource_output

_MENTION = re.compile(r"(?:^|(?<=\s))@([A-Za-z0-9_.-]+):(\S+)")
_TRAILING = ".,;!?)]}'\""
MAX_RESOURCES = 10


def resource_mentions(text: str, servers: Sequence[str]) -> list[tuple[str, str]]:
    """(server, uri) for each ``@server:uri`` naming one of ``servers``, in order, once."""
    found: list[tuple[str, str]] = []
    for match in _MENTION.finditer(text):
        server, uri = match.group(1), match.group(2).rstrip(_TRAILING)
        if server in servers and uri and (server, uri) not in found:
            found.append((server, uri))
    return found[:MAX_RESOURCES]


async def attach_resources(prompt: UserPrompt, manager: McpManager, *,
                           redact: Callable[[str], str] | None = None,
                           max_tokens: int = 25_000) -> UserPrompt:
    mentions = resource_mentions(prompt.text, manager.names())
    if not mentions:
        return prompt
    attachments: list[Attachment] = []
    for server, uri in mentions:
        name = f"{server}:{uri}"
        try:
            result = await manager.read_resource(server, uri)
        except Exception as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            attachments.append(Attachment(name, "refused", f"the resource could not be read ({reason})",
                                          f"⚠ {name} not attached: {reason}"))
            continue
        text = resource_output(result, ResultLimits(max_tokens), label=name).content
        if redact is not None:
            text = redact(text)
        lines = text.count("\n") + 1
        attachments.append(Attachment(name, "file", text, f"📎 {name} ({lines} lines)"))
    return replace(prompt, attachments=(*prompt.attachments, *attachments))
