"""Sessions: one append-only JSONL file per conversation.

Records, one JSON object per line, each with a ``type``:
  session     first line: id, workspace, created, provider, model
  message     one conversation message (Message.to_dict()) and when it was written
  turn_state  the TurnState at a turn boundary (+ ``run_end`` when a run stopped)
  model       the model the user switched to (/model); the last one is the session's
  compaction  the whole history after a compaction replaced it
  rewind      the whole history after a rewind to just before prompt ``to``; the
              records before it keep the abandoned branch, so nothing is lost
  subagent    a finished sub-agent: the parent's call id, its model, messages, usage
              and cost (read by trajectory exports, not by a resume)

Lines are written as things happen and flushed at once, so a killed process loses at
most the turn in flight. Secrets are redacted from every line before it is written.

A writer holds an exclusive ``flock`` on its file for as long as it is open (the kernel
drops it when the process dies), so two runs never append to one conversation: the
second is refused with :class:`SessionLocked` and can :meth:`SessionStore.fork` a copy.
"""

from __future__ import annotations

import builtins
import fcntl
import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from ..messages import Message, prompt_count, scrub_message
from ..private_files import open_private, private_folder
from ..redact import Redactor
from ..transcript import SubagentRun, close_dangling
from ..turn_state import TurnState

# Secrets of every known shape; a run passes its own Redactor, which also knows its keys.
SHAPES_ONLY = Redactor()

FORMAT_VERSION = 1


class SessionError(Exception):
    """A session that cannot be read, with a one-line reason."""


class SessionLocked(SessionError):
    """The session is open for writing in another process."""

    def __init__(self, session_id: str, pid: int | None) -> None:
        holder = f"another loom (pid {pid})" if pid else "another loom"
        super().__init__(f"session {session_id} is in use by {holder}; use --fork-session to continue a copy")
        self.session_id = session_id
        self.pid = pid


@dataclass(frozen=True)
class SessionInfo:
    id: str
    path: Path
    workspace: str
    created: float
    updated: float
    first_prompt: str
    prompts: int  # how many the user sent (messages.prompt_count)
    provider: str
    model: str


@dataclass(frozen=True)
class LoadedSession:
    info: SessionInfo
    messages: tuple[Message, ...]
    turn_state: TurnState
    # Messages appended on load to close a turn the session was cut off in.
    repaired: tuple[Message, ...] = ()
    # The file's size when it was read: a different size later means another run wrote to it.
    size: int = 0
    # The last rewind of the conversation or the code (None: never rewound).
    last_rewind: LastRewind | None = None


@dataclass(frozen=True)
class LastRewind:
    """The session's last rewind record, and what undoing it needs."""

    prompt_id: str  # rewound to just before this prompt ("" for an undo)
    mode: str  # "both", "conversation" or "code"
    undo_snapshot: int | None  # the workspace snapshot taken just before its restore
    before: tuple[Message, ...]  # the conversation just before it
    added_since: bool  # something other than reminders was added since (an undo would drop it)


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class SessionWriter:
    def __init__(self, path: Path, session_id: str, *, redactor: Redactor | None = SHAPES_ONLY) -> None:
        self.id = session_id
        self.path = path
        self._redactor = redactor  # None: the user turned redaction off
        private_folder(path.parent)  # it holds every file the model read: the user's alone
        self._file: IO[str] = open_private(path, "a")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            raise SessionLocked(session_id, lock_holder(path)) from None

    def _write(self, record: dict[str, Any]) -> None:
        # default=str: an annotation of an odd type must not lose the line.
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        if self._redactor is not None:
            line = self._redactor.redact(line)
        self._file.write(line + "\n")
        self._file.flush()

    def write_header(self, workspace: Path, provider: str, model: str, *, forked_from: str | None = None) -> None:
        header: dict[str, Any] = {"type": "session", "version": FORMAT_VERSION, "id": self.id,
                                  "workspace": str(workspace), "created": time.time(), "provider": provider,
                                  "model": model}
        if forked_from:
            header["forked_from"] = forked_from
        self._write(header)

    def append_message(self, message: Message) -> None:
        self._write({"type": "message", "message": scrub_message(message).to_dict(), "time": time.time()})

    def append_turn_state(self, state: TurnState, run_end: str | None = None) -> None:
        record: dict[str, Any] = {"type": "turn_state", "state": state.to_dict(), "time": time.time()}
        if run_end:
            record["run_end"] = run_end
        self._write(record)
        if run_end:
            os.fsync(self._file.fileno())  # the end of a run must survive a crash

    def append_model(self, model: str) -> None:
        self._write({"type": "model", "model": model, "time": time.time()})

    def append_subagent(self, run: SubagentRun) -> None:
        self._write({"type": "subagent", "call_id": run.call_id, "description": run.description,
                     "agent_type": run.agent_type, "model": run.model, "started": run.started, "ended": run.ended,
                     "outcome": run.outcome, "usage": run.usage.to_dict(), "cost_usd": run.cost_usd,
                     "messages": [scrub_message(m).to_dict() for m in run.messages]})

    def append_compaction(self, messages: Sequence[Message]) -> None:
        self._write({"type": "compaction", "messages": [scrub_message(m).to_dict() for m in messages]})

    def append_rewind(self, prompt_id: str, messages: Sequence[Message], *, mode: str = "both",
                      undo_snapshot: int | None = None) -> None:
        record: dict[str, Any] = {"type": "rewind", "to": prompt_id, "mode": mode, "time": time.time(),
                                  "messages": [scrub_message(m).to_dict() for m in messages]}
        if undo_snapshot is not None:
            record["undo_snapshot"] = undo_snapshot
        self._write(record)
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()  # releases the lock


def lock_holder(path: Path) -> int | None:
    """The pid holding an flock on ``path``, from /proc/locks (Linux); None elsewhere."""
    try:
        stat = path.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    wanted = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF" ("->" marks a waiter).
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5] == wanted and fields[4].isdigit():
            return int(fields[4])
    return None


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or session_id.startswith("."):
            raise SessionError(f"invalid session id {session_id!r}")
        return self.root / f"{session_id}.jsonl"

    def create(self, workspace: Path, *, provider: str, model: str, redactor: Redactor | None = SHAPES_ONLY,
               forked_from: str | None = None) -> SessionWriter:
        session_id = new_session_id()
        writer = SessionWriter(self.path_for(session_id), session_id, redactor=redactor)
        writer.write_header(workspace, provider, model, forked_from=forked_from)
        return writer

    def open_writer(self, loaded: LoadedSession, *, redactor: Redactor | None = SHAPES_ONLY) -> SessionWriter:
        """A writer appending to ``loaded``; :class:`SessionLocked` if another process has it."""
        writer, _ = self.resume(loaded, redactor=redactor)
        return writer

    def resume(self, loaded: LoadedSession, *, redactor: Redactor | None = SHAPES_ONLY
               ) -> tuple[SessionWriter, LoadedSession]:
        """Lock ``loaded``'s file for appending, and the session as it stands now: read
        again when another run wrote to it between the read and the lock, so nothing
        is appended after a history this run has not seen."""
        writer = SessionWriter(loaded.info.path, loaded.info.id, redactor=redactor)
        try:
            if loaded.info.path.stat().st_size != loaded.size:
                loaded = _read(loaded.info.path)
        except (OSError, SessionError):
            writer.close()
            raise
        for message in loaded.repaired:
            writer.append_message(message)
        return writer, loaded

    def fork(self, loaded: LoadedSession, workspace: Path, *, provider: str, model: str,
             redactor: Redactor | None = SHAPES_ONLY) -> SessionWriter:
        """A new session holding a copy of ``loaded``'s history (the original is untouched)."""
        writer = self.create(workspace, provider=provider, model=model, redactor=redactor, forked_from=loaded.info.id)
        for message in loaded.messages:
            writer.append_message(message)
        writer.append_turn_state(loaded.turn_state)
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

    def latest(self, workspace: Path) -> tuple[LoadedSession | None, builtins.list[str]]:
        """The newest readable session of ``workspace`` (for ``--continue``), and one line
        for each newer file that was skipped because it could not be read."""
        skipped: builtins.list[str] = []
        if not self.root.exists():
            return None, skipped
        paths: builtins.list[tuple[float, Path]] = []
        for path in self.root.glob("*.jsonl"):
            try:
                paths.append((path.stat().st_mtime, path))
            except OSError:
                continue
        for _, path in sorted(paths, reverse=True):
            owner = _header_workspace(path)
            if owner is not None and Path(owner) != workspace:
                continue  # another workspace's session
            try:
                loaded = _read(path)
            except SessionError as error:
                skipped.append(f"skipped {path}: {error}")
                continue
            return loaded, skipped
        return None, skipped


def _header_workspace(path: Path) -> str | None:
    """The workspace a session's first line names; None when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    workspace = header.get("workspace") if isinstance(header, dict) and header.get("type") == "session" else None
    return workspace if isinstance(workspace, str) else None


class _Malformed(ValueError):
    """A session line of the wrong shape."""


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} is not a JSON object")
    return value


def _message(value: Any) -> Message:
    data = _mapping(value, "the message")
    try:
        message = Message.from_dict(data)
    except (TypeError, AttributeError) as error:
        raise _Malformed(f"the message has the wrong shape ({error})") from None
    problem = _part_problem(message)
    if problem:
        raise _Malformed(problem)
    # Old versions could write a lone surrogate (escaped as \udXXX); no request could carry it.
    return scrub_message(message)


def _part_problem(message: Message) -> str | None:
    for part in message.parts:
        for name, value in vars(part).items():
            if name == "input":
                if not isinstance(value, dict):
                    return f"a {part.type} part's input is not a JSON object"
            elif name == "is_error":
                if not isinstance(value, bool):
                    return f"a {part.type} part's is_error is not true or false"
            elif name == "provider_data":
                if value is not None and not isinstance(value, dict):
                    return f"a {part.type} part's provider_data is not a JSON object"
            elif name in ("signature", "redacted_data", "raw_input"):
                if value is not None and not isinstance(value, str):
                    return f"a {part.type} part's {name} is not a string"
            elif not isinstance(value, str):
                return f"a {part.type} part's {name} is not a string"
    if not isinstance(message.meta, dict):
        return "the message's meta is not a JSON object"
    return None


def _read(path: Path, summary_only: bool = False) -> LoadedSession:
    name = path.name
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SessionError(f"session file {name} cannot be read: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_number = data.count(b"\n", 0, error.start) + 1
        raise SessionError(f"session file {name} is not UTF-8 text (byte 0x{data[error.start]:02x} "
                           f"at line {line_number})") from None
    lines = text.splitlines()
    if not lines:
        raise SessionError(f"session file {name} is empty")
    header: dict[str, Any] | None = None
    messages: list[Message] = []
    state = TurnState.initial()
    first_prompt = ""
    last_rewind: LastRewind | None = None
    model = ""  # the last /model switch; the header's model when none
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = _mapping(json.loads(line), "the line")
            kind = record.get("type")
            if number == 1:
                if kind != "session":
                    raise _Malformed("the first line is not a session header")
                header = record
            elif kind == "message":
                message = _message(record.get("message"))
                messages.append(message)
                if last_rewind is not None and not message.meta.get("reminder"):
                    last_rewind = replace(last_rewind, added_since=True)
                # A prompt with @-attachments names what was typed in its meta.
                if not first_prompt and message.role == "user" and (not message.meta or "prompt" in message.meta):
                    first_prompt = str(message.meta.get("prompt", message.text))
            elif kind == "model":
                model = str(record.get("model") or "") or model
            elif kind == "turn_state":
                state = TurnState.from_dict(_mapping(record.get("state"), "the turn state"))
            elif kind in ("compaction", "rewind"):
                history = record.get("messages")
                if not isinstance(history, list):
                    raise _Malformed(f"the {kind}'s messages are not a list")
                if kind == "rewind":
                    undo = record.get("undo_snapshot")
                    last_rewind = LastRewind(prompt_id=str(record.get("to", "")), mode=str(record.get("mode", "both")),
                                             undo_snapshot=undo if isinstance(undo, int) else None,
                                             before=tuple(messages), added_since=False)
                elif last_rewind is not None:  # a compaction replaced what an undo would restore
                    last_rewind = replace(last_rewind, added_since=True)
                messages = [_message(m) for m in history]
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            if number == len(lines) and number > 1 and not text.endswith("\n"):
                break  # a line cut off by a kill: everything before it is intact
            raise SessionError(f"session file {name} is malformed at line {number}: {error}") from None
    if header is None:
        raise SessionError(f"session file {name} is malformed at line 1: the first line is not a session header")
    repaired: tuple[Message, ...] = ()
    history = tuple(messages)
    if not summary_only:
        from ..context.validity import repair_transcript, transcript_problems

        repaired = tuple(close_dangling(messages))
        history += repaired
        if transcript_problems(history):
            # Written by a run that crashed between two lines (or an older, buggier Loom):
            # send the closest valid transcript, or every request would be refused.
            history = repair_transcript(history, note="the session was cut off")
    try:
        created = float(header.get("created") or 0)
    except (TypeError, ValueError):
        created = 0.0
    info = SessionInfo(id=str(header.get("id") or path.stem), path=path, workspace=str(header.get("workspace", "")),
                       created=created, updated=path.stat().st_mtime, first_prompt=first_prompt,
                       prompts=prompt_count(history), provider=str(header.get("provider", "")),
                       model=model or str(header.get("model", "")))
    return LoadedSession(info=info, messages=history, turn_state=state.__class__(
        turn=state.turn, turn_id=state.turn_id, parent_turn_id=state.parent_turn_id), repaired=repaired,
        size=len(data), last_rewind=last_rewind)
