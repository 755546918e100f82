"""Sessions: one append-only JSONL file per conversation.

Records, one JSON object per line, each with a ``type``:
  session     first line: id, workspace, created, provider, model
  message     one conversation message (Message.to_dict())
  turn_state  the TurnState at a turn boundary (+ ``run_end`` when a run stopped)
  compaction  the whole history after a compaction replaced it

Lines are written as things happen and flushed at once, so a killed process loses at
most the turn in flight. Secrets are redacted from every line before it is written.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..transcript import close_dangling
from ..messages import Message
from ..redact import redact_secrets
from ..turn_state import TurnState

FORMAT_VERSION = 1


class SessionError(Exception):
    """A session that cannot be read, with a one-line reason."""


@dataclass(frozen=True)
class SessionInfo:
    id: str
    path: Path
    workspace: str
    created: float
    updated: float
    first_prompt: str
    turns: int
    provider: str
    model: str


@dataclass(frozen=True)
class LoadedSession:
    info: SessionInfo
    messages: tuple[Message, ...]
    turn_state: TurnState
    # Messages appended on load to close a turn the session was cut off in.
    repaired: tuple[Message, ...] = ()


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class SessionWriter:
    def __init__(self, path: Path, session_id: str, *, redact: bool = True) -> None:
        self.id = session_id
        self.path = path
        self._redact = redact
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = open(path, "a", encoding="utf-8")

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        if self._redact:
            line = redact_secrets(line)
        self._file.write(line + "\n")
        self._file.flush()

    def write_header(self, workspace: Path, provider: str, model: str) -> None:
        self._write({"type": "session", "version": FORMAT_VERSION, "id": self.id, "workspace": str(workspace),
                     "created": time.time(), "provider": provider, "model": model})

    def append_message(self, message: Message) -> None:
        self._write({"type": "message", "message": message.to_dict()})

    def append_turn_state(self, state: TurnState, run_end: str | None = None) -> None:
        record: dict[str, Any] = {"type": "turn_state", "state": state.to_dict(), "time": time.time()}
        if run_end:
            record["run_end"] = run_end
        self._write(record)
        if run_end:
            os.fsync(self._file.fileno())  # the end of a run must survive a crash

    def append_compaction(self, messages: Sequence[Message]) -> None:
        self._write({"type": "compaction", "messages": [m.to_dict() for m in messages]})

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or session_id.startswith("."):
            raise SessionError(f"invalid session id {session_id!r}")
        return self.root / f"{session_id}.jsonl"

    def create(self, workspace: Path, *, provider: str, model: str, redact: bool = True) -> SessionWriter:
        session_id = new_session_id()
        writer = SessionWriter(self.path_for(session_id), session_id, redact=redact)
        writer.write_header(workspace, provider, model)
        return writer

    def open_writer(self, loaded: LoadedSession, *, redact: bool = True) -> SessionWriter:
        writer = SessionWriter(loaded.info.path, loaded.info.id, redact=redact)
        for message in loaded.repaired:
            writer.append_message(message)
        return writer

    def load(self, session_id: str) -> LoadedSession:
        path = self.path_for(session_id)
        if not path.exists():
            raise SessionError(f"no session {session_id!r} (looked in {self.root})")
        return _read(path)

    def list(self, workspace: Path | None = None) -> tuple[list[SessionInfo], list[str]]:
        """Sessions newest first (optionally only one workspace's), and warnings for
        files that could not be read."""
        infos: list[SessionInfo] = []
        warnings: list[str] = []
        if not self.root.exists():
            return infos, warnings
        for path in self.root.glob("*.jsonl"):
            try:
                info = _read(path, summary_only=True).info
            except SessionError as error:
                warnings.append(str(error))
                continue
            if workspace is None or Path(info.workspace) == workspace:
                infos.append(info)
        infos.sort(key=lambda i: i.updated, reverse=True)
        return infos, warnings

    def newest(self, workspace: Path) -> SessionInfo | None:
        infos, _ = self.list(workspace)
        return infos[0] if infos else None


def _read(path: Path, summary_only: bool = False) -> LoadedSession:
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SessionError(f"session file {name} cannot be read: {error}") from None
    lines = text.splitlines()
    if not lines:
        raise SessionError(f"session file {name} is empty")
    header: dict[str, Any] | None = None
    messages: list[Message] = []
    state = TurnState.initial()
    first_prompt = ""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record["type"]
            if number == 1:
                if kind != "session":
                    raise ValueError("the first line is not a session header")
                header = record
            elif kind == "message":
                message = Message.from_dict(record["message"])
                messages.append(message)
                if not first_prompt and message.role == "user" and not message.meta:
                    first_prompt = message.text
            elif kind == "turn_state":
                state = TurnState.from_dict(record["state"])
            elif kind == "compaction":
                messages = [Message.from_dict(m) for m in record["messages"]]
        except (ValueError, KeyError, TypeError) as error:
            if number == len(lines) and number > 1 and not text.endswith("\n"):
                break  # a line cut off by a kill: everything before it is intact
            raise SessionError(f"session file {name} is malformed at line {number}: {error}") from None
    assert header is not None
    repaired = tuple(close_dangling(messages)) if not summary_only else ()
    info = SessionInfo(id=str(header.get("id") or path.stem), path=path, workspace=str(header.get("workspace", "")),
                       created=float(header.get("created") or 0), updated=path.stat().st_mtime,
                       first_prompt=first_prompt, turns=state.turn, provider=str(header.get("provider", "")),
                       model=str(header.get("model", "")))
    return LoadedSession(info=info, messages=tuple(messages) + repaired, turn_state=state.__class__(
        turn=state.turn, turn_id=state.turn_id, parent_turn_id=state.parent_turn_id), repaired=repaired)
