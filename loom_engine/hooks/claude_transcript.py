"""The conversation as Claude Code writes its transcript, for hook scripts to read.

A hook's ``transcript_path`` names a file in Claude Code's format, since scripts written
for Claude Code read it (a Stop hook taking the last assistant message with
``tail -1 "$transcript" | jq .message.content``, say). Loom's own session file has
another shape; this module writes a second file beside it, kept current before each
hook runs. One JSON object a line, one line a message:

    {"parentUuid": null | "<the line before>", "isSidechain": false,
     "type": "user" | "assistant", "message": {"role": ..., "content": ...},
     "uuid": "...", "timestamp": "2026-01-01T12:00:00.000Z", "cwd": "/the/workspace",
     "sessionId": "<Loom's session id>"}

``message.content`` is the prompt's text for a typed prompt, else a list of Anthropic
content blocks: ``text``, ``thinking``, ``tool_use`` (Claude Code's tool names and input
keys: ``Edit`` with ``file_path``), ``tool_result`` (in a ``user`` line, as the API has it),
``image``. An assistant line's message also has ``id``, ``type: "message"`` and
``model``. Lines Loom added for the model (reminders, hook context) have
``"isMeta": true``; a compaction summary has ``"isCompactSummary": true``. Secrets are
redacted from each line as from the session file. A compaction or a rewind rewrites the
file to the conversation as it then is.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..messages import ImagePart, Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from ..private_files import open_private, private_folder
from .payload import claude_tool_input, claude_tool_name

# Beside the sessions, in a folder of its own: a session listing reads every *.jsonl there.
FOLDER = "claude-code"


def claude_transcript_file(session_file: Path) -> Path:
    """Where the Claude Code-format copy of the session at ``session_file`` is written."""
    return session_file.parent / FOLDER / session_file.name


class ClaudeTranscript:
    """Keeps one Claude Code-format file in step with a conversation: new messages are
    appended; a history that no longer starts with what was written is written anew."""

    def __init__(self, path: Path, *, session_id: str, root: Path,
                 redact: Callable[[str], str] | None) -> None:
        self.path = path
        self._session_id = session_id
        self._root = root
        self._redact = redact  # None: the user turned redaction off
        self._written: list[Message] = []
        # Whether this object wrote the file: a file left by an earlier run is written anew.
        self._owned = False
        self._last_uuid: str | None = None
        self._stamps: dict[str, str] = {}  # message id -> when it was first written
        self._models: dict[str, str] = {}  # message id -> the model at that time

    def sync(self, messages: Sequence[Message], *, model: str) -> str:
        """Bring the file up to ``messages``; its path, or "" when it cannot be written
        (the hook still runs, with no transcript)."""
        try:
            if self._is_prefix(messages):
                self._append(messages[len(self._written):], model)
            else:
                self._rewrite(messages, model)
        except OSError:
            self._owned = False  # written anew next time
            return ""
        return str(self.path)

    def _is_prefix(self, messages: Sequence[Message]) -> bool:
        return (self._owned and len(messages) >= len(self._written) and self.path.exists()
                and all(a is b or a == b for a, b in zip(self._written, messages, strict=False)))

    def _append(self, new: Sequence[Message], model: str) -> None:
        if not new:
            return
        private_folder(self.path.parent)
        with open_private(self.path, "a") as file:
            file.write(self._lines(new, model))
        self._written.extend(new)

    def _rewrite(self, messages: Sequence[Message], model: str) -> None:
        private_folder(self.path.parent)
        self._written, self._last_uuid = [], None
        partial = self.path.with_name(self.path.name + ".partial")
        with open_private(partial, "w") as file:
            file.write(self._lines(messages, model))
        os.replace(partial, self.path)
        self._written, self._owned = list(messages), True

    def _lines(self, messages: Sequence[Message], model: str) -> str:
        out = []
        for message in messages:
            line_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"loom:{self._session_id}/{message.id}"))
            stamp = self._stamps.setdefault(message.id, _now())
            line = claude_line(message, root=self._root, model=self._models.setdefault(message.id, model))
            line = {"parentUuid": self._last_uuid, "isSidechain": False, **line, "uuid": line_uuid,
                    "timestamp": stamp, "cwd": str(self._root), "sessionId": self._session_id}
            text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)
            out.append((self._redact(text) if self._redact is not None else text) + "\n")
            self._last_uuid = line_uuid
        return "".join(out)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def claude_line(message: Message, *, root: Path, model: str) -> dict[str, Any]:
    """The ``type``, ``message`` and flags of one transcript line."""
    if message.role == "assistant":
        body: dict[str, Any] = {"id": message.id, "type": "message", "role": "assistant", "model": model,
                                "content": [_block(part, root) for part in message.parts]}
        return {"type": "assistant", "message": body}
    parts = message.parts
    content: str | list[dict[str, Any]]
    if parts and all(isinstance(part, TextPart) for part in parts) and message.role != "tool":
        content = message.text
    else:
        content = [_block(part, root) for part in parts]
    line: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": content}}
    if message.meta.get("reminder") or message.role == "system":
        line["isMeta"] = True
    if message.meta.get("summary"):
        line["isCompactSummary"] = True
    return line


def _block(part: object, root: Path) -> dict[str, Any]:
    match part:
        case TextPart(text=text):
            return {"type": "text", "text": text}
        case ThinkingPart(redacted_data=str(data)):
            return {"type": "redacted_thinking", "data": data}
        case ThinkingPart(thinking=thinking, signature=signature):
            return {"type": "thinking", "thinking": thinking, "signature": signature or ""}
        case ToolUsePart(id=call_id, name=name, input=arguments):
            return {"type": "tool_use", "id": call_id, "name": claude_tool_name(name),
                    "input": claude_tool_input(name, arguments, root)}
        case ToolResultPart(tool_use_id=call_id, content=text, is_error=is_error):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
            if is_error:
                block["is_error"] = True
            return block
        case ImagePart(media_type=media_type, data=data):
            return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    raise TypeError(f"unknown message part {type(part).__name__}")
