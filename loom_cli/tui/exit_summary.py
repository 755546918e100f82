"""What stays on the terminal after the chat closes: the last exchange and how to go on.

The full-screen app lives on the alternate screen, which the terminal throws away on
exit; without this the work would vanish from view. Printed to the normal screen once
the app has left it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from loom_engine.messages import Message

if TYPE_CHECKING:
    from ..chat_agent import ChatAgent

# Inline markdown that reads as noise on a plain terminal: bold/italic stars, code ticks.
_INLINE_MARKUP = re.compile(r"\*\*|`")
PROMPT_LINES = 2
ANSWER_LINES = 4


def print_exit_summary(agent: ChatAgent | None, agent_error: str | None) -> None:
    """Back on the normal screen: the last exchange and how to continue it."""
    import shutil

    if agent is None:
        if agent_error:
            print(f"Loom did not reach a model: {agent_error}", flush=True)
        return
    text = exit_summary(list(agent.messages), agent.session_id,
                        shutil.get_terminal_size().columns)
    if text:
        print(text, flush=True)


def last_exchange(messages: Sequence[Message]) -> tuple[str, str] | None:
    """(the last prompt the user typed, the answer to it: '' if none came), or None."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not message.meta and message.text.strip():
            answers = [m.text for m in messages[index + 1:] if m.role == "assistant" and m.text.strip()]
            return message.text, (answers[-1] if answers else "")
    return None


def exit_summary(messages: Sequence[Message], session_id: str | None, width: int) -> str:
    """The lines to print, '' when there was no exchange to go back to."""
    exchange = last_exchange(messages)
    if exchange is None:
        return ""
    prompt, answer = exchange
    width = max(width, 30)
    lines = ["Last exchange:"]
    lines += _excerpt(prompt, PROMPT_LINES, width, first="> ", rest="  ")
    if answer:
        lines += _excerpt(answer, ANSWER_LINES, width, first="  ", rest="  ")
    else:
        lines.append("  (no answer: the run stopped before one came)")
    follow = ["Continue this conversation: loom --continue"]
    if session_id:
        resume = f"(or loom --resume {session_id})"
        if len(follow[0]) + 2 + len(resume) <= width:
            follow[0] += "  " + resume
        else:
            follow.append("  " + resume)
    lines += ["", *follow]
    return "\n".join(lines)


def _excerpt(text: str, count: int, width: int, *, first: str, rest: str) -> list[str]:
    """The first ``count`` non-blank lines of ``text``, each cut to ``width``; '…' if more."""
    source = [line for line in _plain_lines(text) if line.strip()]
    shown = source[:count]
    lines = []
    for number, line in enumerate(shown):
        prefix = first if number == 0 else rest
        room = width - len(prefix)
        lines.append(prefix + (line if len(line) <= room else line[:room - 1] + "…"))
    if len(source) > count:
        lines.append(rest + "…")
    return lines


def _plain_lines(text: str) -> Iterator[str]:
    """The text's lines as a terminal shows them best: code fences and inline markup out
    (the code itself reads fine without them), code lines kept exactly."""
    in_code = False
    for line in text.strip().splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        yield line.rstrip() if in_code else _INLINE_MARKUP.sub("", line).rstrip()
