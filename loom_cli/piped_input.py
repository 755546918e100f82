"""`loom run`'s task text: the prompt argument and what is piped into standard input.

As with `claude -p`: ``git diff | loom run "review this"`` sends the prompt, a newline,
then the piped text as it came; ``loom run -`` (or no prompt at all) makes standard input
the whole prompt. A terminal's standard input is never read. A pipe that stays silent is
waited for a few seconds and then left alone, so a script that starts `loom run` with an
inherited, idle standard input does not hang.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

# More than any model's context window holds (a million tokens is about 4 MB of text):
# a larger input is a mistake (a binary, a log piped whole), refused before any request.
MAX_PIPED_BYTES = 4 * 1024 * 1024
# How long a silent standard input is waited for before the run goes on without it.
FIRST_BYTE_WAIT_S = 3.0


class PromptInputError(ValueError):
    """The task text cannot be used; the message is one line naming the cause."""


@dataclass(frozen=True)
class TaskText:
    text: str
    # A line for stderr (the run goes on), e.g. standard input stayed silent.
    warning: str | None = None


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.0f} MB" if count >= 1024 * 1024 else f"{count} bytes"


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PromptInputError(f"{source} is not UTF-8 (byte 0x{data[error.start]:02x} at position "
                               f"{error.start})") from None


def _read_capped(stream: BinaryIO, limit: int) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise PromptInputError(f"standard input is larger than {_size(limit)}, the most `loom run` takes; "
                               "send a smaller part (e.g. `head -c`) or point the task at a file")
    return data


def _has_data_soon(stream: BinaryIO, wait_s: float) -> bool:
    """Whether standard input has bytes (or its end) within ``wait_s``; True where that
    cannot be known (then it is read as before)."""
    try:
        ready, _, _ = select.select([stream], [], [], wait_s)
    except (OSError, ValueError, TypeError):  # not a selectable descriptor (Windows pipes)
        return True
    return bool(ready)


def task_text(prompt: str | None, stdin: BinaryIO | None, is_terminal: Callable[[], bool], *,
              limit: int = MAX_PIPED_BYTES, wait_s: float = FIRST_BYTE_WAIT_S) -> TaskText:
    """The task: ``prompt``, with what is piped in appended after a newline. ``prompt``
    '-': standard input is the whole prompt, read to its end; None (no prompt given): the
    same, when something is piped in."""
    if prompt == "-":
        if stdin is None:
            raise PromptInputError("'-' reads the prompt from standard input, and there is none")
        return TaskText(_decode(_read_capped(stdin, limit), "the prompt on standard input"))
    if prompt is None:
        missing = PromptInputError("no prompt: give the task as an argument, or pipe it in (see loom run --help)")
        if stdin is None or is_terminal() or not _has_data_soon(stdin, wait_s):
            raise missing
        data = _read_capped(stdin, limit)
        if not data:
            raise missing
        return TaskText(_decode(data, "the prompt on standard input"))
    text = _decode(os.fsencode(prompt), "the prompt argument")  # undecodable bytes came escaped
    if stdin is None or is_terminal():
        return TaskText(text)
    if not _has_data_soon(stdin, wait_s):
        return TaskText(text, f"nothing came on standard input in {wait_s:g} s; going on without it "
                              "(`< /dev/null` skips the wait)")
    extra = _decode(_read_capped(stdin, limit), "standard input")
    return TaskText(f"{text}\n{extra}" if extra else text)


def _message_text(line: str, number: int) -> str:
    """The text of one ``{"type": "user", "message": {"role": "user", "content": ...}}``
    line (content a string or a list of text blocks)."""
    where = f"standard input, line {number}"
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise PromptInputError(f"{where} is not JSON ({error.msg} at column {error.colno})") from None
    message = value.get("message") if isinstance(value, dict) and value.get("type") == "user" else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text"
                                         and isinstance(b.get("text"), str) for b in content):
        return "\n".join(b["text"] for b in content)
    raise PromptInputError(f'{where} is not a user message with text ({{"type": "user", "message": '
                           '{"role": "user", "content": "…"}})')


def stream_json_prompts(stdin: BinaryIO | None, *, limit: int = MAX_PIPED_BYTES) -> list[str]:
    """``--input-format stream-json``: the user's messages, one JSON object a line, read to
    the end of standard input; each is run in turn, in the same session."""
    if stdin is None:
        raise PromptInputError("--input-format stream-json reads the messages from standard input, and there is none")
    text = _decode(_read_capped(stdin, limit), "standard input")
    prompts = [_message_text(line, number) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not prompts:
        raise PromptInputError("no prompt: --input-format stream-json found no message on standard input")
    return prompts
