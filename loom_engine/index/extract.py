"""What of a session file is searchable: the prompts, the answers, the tools called (and
bash commands), the paths they touched, the project; each piece redacted before it is
kept. Read from a byte offset, so a session that grew is read only where it grew.

Compaction and rewind records repeat history already read from its message records;
only a compaction's summary is new, and only it is taken from them. Tool results are
left out: they are the files and outputs the tools saw, bulky, and found again by
the paths and commands that produced them.

For recall by meaning a session is also read as *exchanges* (:func:`read_exchanges`):
each prompt with the answers that followed it, the same redacted pieces, one text each
to embed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..messages import Message, is_prompt, scrub_text
from ..redact import Redactor

# One message contributes at most this much (a pasted log, a long answer): enough to
# find it by, without one session's text growing without bound.
MAX_PIECE_CHARS = 4000
# And a session at most this much per column; later text is not indexed.
MAX_COLUMN_CHARS = 1_000_000
MAX_HEAD_BYTES = 64 * 1024
# An exchange embedded is at most this long (a few hundred tokens: the prompt and the
# start of the answer say what it was about), and a session gives at most this many.
MAX_EXCHANGE_CHARS = 2000
MAX_EXCHANGES = 200


@dataclass(frozen=True)
class SessionHeader:
    session_id: str
    project: str
    created: float
    head: str  # a hash of the header line


@dataclass
class SessionText:
    """The searchable text read from part of a session file (mutable while it is read)."""

    prompts: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    prompt_count: int = 0


@dataclass(frozen=True)
class ReadPart:
    """What reading a session file from some offset gave."""

    header: SessionHeader | None  # only when read from the start
    text: SessionText
    end: int  # the offset just past the last whole line read


def head_hash(line: bytes) -> str:
    return hashlib.sha1(line, usedforsecurity=False).hexdigest()


def read_head(path: Path) -> str | None:
    """The hash of the file's first line, None when it has none yet."""
    with open(path, "rb") as handle:
        line = handle.readline(MAX_HEAD_BYTES)
    return head_hash(line) if line.endswith(b"\n") else None


def read_from(path: Path, offset: int, redactor: Redactor) -> ReadPart:
    """The session file's whole lines from ``offset`` on, as searchable text."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    header: SessionHeader | None = None
    text = SessionText()
    for number, raw in enumerate(data[:end].splitlines()):
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # a damaged line: the rest of the file is still worth finding
        if not isinstance(record, dict):
            continue
        if offset == 0 and number == 0:
            header = _header(record, raw, path)
            continue
        _add_record(text, record, redactor)
    return ReadPart(header=header, text=text, end=offset + end)


def read_exchanges(path: Path, end: int, redactor: Redactor) -> list[str]:
    """The session file's exchanges up to byte ``end`` (what the index has read), each a
    prompt and the answers that followed it, redacted, capped."""
    with open(path, "rb") as handle:
        data = handle.read(end)
    exchanges: list[list[str]] = []
    for raw in data.splitlines()[1:]:  # the first line is the header
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") != "message":
            continue
        message = _message(record.get("message"))
        if message is None:
            continue
        if is_prompt(message):
            if len(exchanges) == MAX_EXCHANGES:
                break
            typed = message.meta.get("prompt", message.text) if message.meta else message.text
            exchanges.append([_piece(str(typed), redactor)])
        elif message.role == "assistant" and message.text.strip() and exchanges:
            exchanges[-1].append(_piece(message.text, redactor))
    return [" ".join(" ".join(pieces).split())[:MAX_EXCHANGE_CHARS] for pieces in exchanges]


def _header(record: Mapping[str, Any], raw: bytes, path: Path) -> SessionHeader:
    try:
        created = float(record.get("created") or 0)
    except (TypeError, ValueError):
        created = 0.0
    return SessionHeader(session_id=str(record.get("id") or path.stem), project=str(record.get("workspace") or ""),
                         created=created, head=head_hash(raw + b"\n"))


def _add_record(text: SessionText, record: Mapping[str, Any], redactor: Redactor) -> None:
    kind = record.get("type")
    if kind == "message":
        message = _message(record.get("message"))
        if message is not None:
            _add_message(text, message, redactor)
    elif kind == "compaction":
        history = record.get("messages")
        for item in history if isinstance(history, list) else ():
            message = _message(item)
            if message is not None and message.meta.get("summary"):
                text.answers.append(_piece(message.text, redactor))


def _message(value: Any) -> Message | None:
    if not isinstance(value, dict):
        return None
    try:
        return Message.from_dict(value)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _add_message(text: SessionText, message: Message, redactor: Redactor) -> None:
    if message.role == "user":
        if is_prompt(message):
            text.prompt_count += 1
            typed = message.meta.get("prompt", message.text) if message.meta else message.text
            text.prompts.append(_piece(str(typed), redactor))
        return
    if message.role != "assistant":
        return
    if message.text.strip():
        text.answers.append(_piece(message.text, redactor))
    for use in message.tool_uses:
        command = use.input.get("command")
        text.tools.append(_piece(f"{use.name} {command}" if isinstance(command, str) else use.name, redactor))
        text.refs.extend(_piece(value, redactor) for value in _paths(use.input))


def _paths(arguments: Mapping[str, Any]) -> list[str]:
    """The paths a tool call names (``path``, ``file_path``, ``notebook_path``, ...)."""
    found: list[str] = []
    for key, value in arguments.items():
        if "path" in key and isinstance(value, str) and value.strip():
            found.append(value)
        elif key == "edits" and isinstance(value, list):  # multi-file edits
            found.extend(v["path"] for v in value if isinstance(v, dict) and isinstance(v.get("path"), str))
    return found


def _piece(value: str, redactor: Redactor) -> str:
    return redactor.redact(scrub_text(value[:MAX_PIECE_CHARS]))


def joined(old: str, new: list[str]) -> str:
    """A column's text with ``new`` pieces added, capped at :data:`MAX_COLUMN_CHARS`."""
    if not new:
        return old
    text = "\n".join([old, *new]) if old else "\n".join(new)
    return text[:MAX_COLUMN_CHARS]
