"""A stored session's history as ``session/update``s, for ``session/load``: the user's
prompts, the answers and thoughts, and each tool call with how it ended."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart, is_prompt

from .sdk import (
    SessionUpdate,
    ToolCallContent,
    ToolCallStart,
    ToolCallStatus,
    agent_text,
    agent_thought,
    text_content,
    user_text,
)
from .tool_calls import tool_kind, tool_locations, tool_title

# A replayed result is shown to recall what happened, not to be read again in full.
_RESULT_CHARS = 2000


def history_updates(messages: Sequence[Message], root: Path) -> Iterator[SessionUpdate]:
    results = {part.tool_use_id: part for message in messages for part in message.parts
               if isinstance(part, ToolResultPart)}
    for message in messages:
        if message.role == "user":
            if is_prompt(message):
                # What the user typed, not the files attached to it.
                prompt = message.meta.get("prompt") if message.meta else None
                yield user_text(str(prompt) if prompt is not None else message.text)
            continue
        if message.role != "assistant":
            continue
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                yield agent_text(part.text)
            elif isinstance(part, ThinkingPart) and part.thinking:
                yield agent_thought(part.thinking)
            elif isinstance(part, ToolUsePart):
                yield _tool_call(part, results.get(part.id), root)


def _tool_call(use: ToolUsePart, result: ToolResultPart | None, root: Path) -> ToolCallStart:
    content: list[ToolCallContent] | None = None
    status: ToolCallStatus = "failed"  # a call with no result was cut off
    if result is not None:
        status = "failed" if result.is_error else "completed"
        text = result.content if len(result.content) <= _RESULT_CHARS else result.content[:_RESULT_CHARS] + "\n…"
        content = [text_content(text)] if text else None
    return ToolCallStart(session_update="tool_call", tool_call_id=use.id, title=tool_title(use.name, use.input),
                         kind=tool_kind(use.name), status=status,
                         raw_input=dict(use.input), locations=tool_locations(use.input, root) or None,
                         content=content)
