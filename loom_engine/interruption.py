"""Closing a turn that was cut off, so the next request is valid and the model knows.

After any stop the transcript must satisfy both providers: every tool_use answered by
exactly one tool_result in the next message, no empty text. The model is also told, in
plain words, that the user interrupted and what was cut off, instead of meeting a
silent gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .messages import Message, TextPart, ToolResultPart

INTERRUPTED_RESULT = "Interrupted by user: this tool call did not run to completion."


def close_interrupted_turn(messages: Sequence[Message], *, partial_text: str,
                           completed: Mapping[str, ToolResultPart], running: Mapping[str, str],
                           reason: str) -> tuple[list[Message], str]:
    """Messages to append after ``messages`` and a short description of what was cut off."""
    added: list[Message] = []
    what: str
    last = messages[-1] if messages else None
    if partial_text.strip():
        added.append(Message.assistant(TextPart(partial_text), interrupted=True))
        what = "while streaming an answer"
    elif last is not None and last.role == "assistant" and last.tool_uses:
        results = []
        for call in last.tool_uses:
            result = completed.get(call.id) or ToolResultPart(call.id, INTERRUPTED_RESULT, is_error=True)
            results.append(result)
        added.append(Message.tool_results(results))
        cut = [c.name for c in last.tool_uses if c.id not in completed]
        what = f"while running {', '.join(cut)}" if cut else "after the tools finished"
    elif running:
        what = f"while running {', '.join(running.values())}"
    else:
        what = "while waiting for the model"
    note = (f"[The user interrupted the previous turn {what} ({reason}). Anything cut off above is "
            "incomplete; do not assume it finished. Wait for the user's next instruction.]")
    added.append(Message.user(note, interruption=True))
    return added, what


def close_dangling(messages: Sequence[Message]) -> list[Message]:
    """What to append to a transcript loaded from a session cut off mid-turn (kill -9).

    Empty when the transcript already ends cleanly.
    """
    if not messages:
        return []
    last = messages[-1]
    if last.role == "assistant" and last.tool_uses:
        added, _ = close_interrupted_turn(messages, partial_text="", completed={}, running={},
                                          reason="the session was cut off")
        return added
    if last.role in ("user", "tool") and not last.meta.get("interruption"):
        # A request was in flight when the session stopped: the model never answered.
        return [Message.user("[The previous turn was cut off before you answered (the session was "
                             "interrupted). Wait for the user's next instruction.]", interruption=True)]
    return []
