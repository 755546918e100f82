"""Whether a transcript is one both providers accept, and how to make it one.

Public API
----------
``transcript_problems(messages) -> list[str]``
    Every rule the transcript breaks, one readable line each; ``[]`` means valid.
``repair_transcript(messages, note="interrupted by user") -> tuple[Message, ...]``
    The closest valid transcript: unanswered tool calls get a synthetic error result,
    empty text parts and then-empty messages go, orphan and duplicate tool results go.
    ``transcript_problems(repair_transcript(m)) == []`` for any ``m``, and repairing a
    valid transcript returns it unchanged.

The rules (what the Anthropic and OpenAI APIs reject):

* the first message is a user message (text, not tool results);
* every message has content, and no text part is empty or only whitespace;
* tool calls appear only in assistant messages, with ids unique in the transcript;
* each tool call is answered by exactly one tool result in the very next message, and
  every tool result answers a call of the message right before it;
* in a message with tool results, the results come before any other content.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..messages import Message, Part, TextPart, ToolResultPart, ToolUsePart
from ..transcript import interrupted_result_text


def _is_results_message(message: Message) -> bool:
    return any(isinstance(p, ToolResultPart) for p in message.parts)


def _blank_text(part: Part) -> bool:
    return isinstance(part, TextPart) and not part.text.strip()


def transcript_problems(messages: Sequence[Message]) -> list[str]:
    problems: list[str] = []
    if not messages:
        return problems
    first = messages[0]
    if first.role != "user" or _is_results_message(first):
        problems.append(f"message 0 is a {_describe(first)}, but a transcript must start with a user message")
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        where = f"message {index} ({message.role})"
        if not message.parts:
            problems.append(f"{where} has no content")
        for part in message.parts:
            if _blank_text(part):
                problems.append(f"{where} has an empty text part")
        uses = message.tool_uses
        if uses and message.role != "assistant":
            problems.append(f"{where} contains tool calls, which only assistant messages may")
        if message.role == "assistant" and _is_results_message(message):
            problems.append(f"{where} contains tool results, which assistant messages may not")
        for use in uses:
            if use.id in seen_ids:
                problems.append(f"{where} reuses the tool call id {use.id!r}")
            seen_ids.add(use.id)
        previous = messages[index - 1] if index > 0 else None
        expected = ({u.id for u in previous.tool_uses}
                    if previous is not None and previous.role == "assistant" else set())
        kinds = [isinstance(p, ToolResultPart) for p in message.parts]
        if any(kinds) and kinds != sorted(kinds, reverse=True):
            problems.append(f"{where} has content before its tool results, which must come first")
        answered: dict[str, int] = {}
        for result in message.tool_results_parts:
            answered[result.tool_use_id] = answered.get(result.tool_use_id, 0) + 1
            if result.tool_use_id not in expected:
                problems.append(f"{where} has a tool result for {result.tool_use_id!r}, which the message "
                                "before it did not call")
        for tool_use_id, count in answered.items():
            if count > 1 and tool_use_id in expected:
                problems.append(f"{where} answers tool call {tool_use_id!r} {count} times")
        if message.role == "assistant" and uses:
            following = messages[index + 1] if index + 1 < len(messages) else None
            got = {r.tool_use_id for r in following.tool_results_parts} if following is not None else set()
            for use in uses:
                if use.id not in got:
                    problems.append(f"{where}: tool call {use.id!r} ({use.name}) has no tool result in the "
                                    "next message")
    return problems


def repair_transcript(messages: Sequence[Message], note: str = "interrupted by user") -> tuple[Message, ...]:
    result_text = interrupted_result_text(note)
    cleaned = _without_blank_text(messages)
    cleaned = _with_unique_tool_ids(cleaned)
    out: list[Message] = []
    index = 0
    while index < len(cleaned):
        original = cleaned[index]
        if original.role != "assistant":
            kept = _drop_parts(original, lambda p: isinstance(p, ToolUsePart))
        else:
            kept = _drop_parts(original, lambda p: isinstance(p, ToolResultPart))
        if kept is None:
            index += 1
            continue
        previous = out[-1] if out else None
        if previous is not None and previous.role == "assistant" and previous.tool_uses:
            # ``kept`` must answer ``previous``: keep what matches, fill the rest in.
            uses = previous.tool_uses
            if _is_results_message(kept):
                answer = _answer(uses, kept, result_text)
                if answer is not None:
                    out.append(answer)
                index += 1
                continue
            out.append(Message.tool_results([ToolResultPart(u.id, result_text, is_error=True) for u in uses]))
            continue  # ``kept`` itself is handled on the next pass, after the results
        if _is_results_message(kept):
            kept = _drop_parts(kept, lambda p: isinstance(p, ToolResultPart))  # orphans
            if kept is None:
                index += 1
                continue
        out.append(kept)
        index += 1
    if out and out[-1].role == "assistant" and out[-1].tool_uses:
        out.append(Message.tool_results([ToolResultPart(u.id, result_text, is_error=True)
                                         for u in out[-1].tool_uses]))
    if out and (out[0].role != "user" or _is_results_message(out[0])):
        out.insert(0, Message.user("[Earlier messages of this conversation are not shown.]", repaired=True))
    repaired = tuple(out)
    if len(repaired) == len(messages) and all(a is b for a, b in zip(repaired, messages, strict=False)):
        return tuple(messages)
    return repaired


def _answer(uses: tuple[ToolUsePart, ...], message: Message, result_text: str) -> Message | None:
    """``message`` reduced to exactly one result per call in ``uses``, in call order."""
    wanted = {u.id for u in uses}
    first: dict[str, ToolResultPart] = {}
    for part in message.tool_results_parts:
        if part.tool_use_id in wanted and part.tool_use_id not in first:
            first[part.tool_use_id] = part
    results = [first.get(u.id) or ToolResultPart(u.id, result_text, is_error=True) for u in uses]
    same_results = all(a is b for a, b in zip(message.parts, results, strict=False))
    if same_results and len(message.parts) >= len(results) and not any(
            isinstance(p, ToolResultPart) for p in message.parts[len(results):]):
        return message
    others = tuple(p for p in message.parts if not isinstance(p, ToolResultPart))
    return replace(message, parts=tuple(results) + others)


def _drop_parts(message: Message, drop: Callable[[Part], bool]) -> Message | None:
    kept = tuple(p for p in message.parts if not drop(p))
    if len(kept) == len(message.parts):
        return message
    return replace(message, parts=kept) if kept else None


def _without_blank_text(messages: Sequence[Message]) -> list[Message]:
    out = []
    for message in messages:
        trimmed = _drop_parts(message, _blank_text)
        if trimmed is not None and trimmed.parts:
            out.append(trimmed)
    return out


def _with_unique_tool_ids(messages: list[Message]) -> list[Message]:
    """Give a reused tool call id a fresh one, in the call and in the result after it."""
    seen: set[str] = set()
    out = list(messages)
    for index, message in enumerate(out):
        if message.role != "assistant" or not message.tool_uses:
            continue
        renames: dict[str, str] = {}
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolUsePart):
                if part.id in seen:
                    fresh = "toolu_" + uuid.uuid4().hex[:20]
                    renames[part.id] = fresh
                    part = replace(part, id=fresh)
                seen.add(part.id)
            parts.append(part)
        if not renames:
            continue
        out[index] = replace(message, parts=tuple(parts))
        if index + 1 < len(out):
            following = out[index + 1]
            out[index + 1] = replace(following, parts=tuple(
                replace(p, tool_use_id=renames[p.tool_use_id])
                if isinstance(p, ToolResultPart) and p.tool_use_id in renames else p
                for p in following.parts))
    return out


def _describe(message: Message) -> str:
    if _is_results_message(message):
        return "tool-result message"
    return f"{message.role} message"
