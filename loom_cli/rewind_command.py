"""`loom rewind`: list a session's prompts, preview and do a rewind, undo the last one — headless.

Without ``--yes`` nothing is changed: the preview is printed (the files that would be
restored, deleted or recreated with their diffs, the conflicts left alone, what the
conversation would become). The session is the newest of the workspace unless
``--session`` names one. ``--undo`` takes back the session's last rewind (files and
conversation), itself with a preview first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_engine.messages import Message
from loom_engine.paths import data_dir, sessions_dir, user_config_file
from loom_engine.sessions.store import LoadedSession, SessionError, SessionStore
from loom_engine.snapshots.model import FileChange, RestorePlan, RestorePoint, RewindMode, StalePlan
from loom_engine.snapshots.restore import Snapshots, restore_points
from loom_engine.snapshots.rewind import RewindError, plan_for, plan_undo, rewind, undo_rewind
from loom_engine.transcript import Transcript
from loom_engine.workspace import find_workspace_root

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


class RewindCommandError(Exception):
    """What stops the command, in one line; ``code`` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class RewindRequest:
    cwd: Path
    session_id: str | None = None
    to: int | None = None
    list_points: bool = False
    undo: bool = False
    mode: RewindMode = RewindMode.BOTH
    yes: bool = False
    include_conflicts: bool = False
    json_output: bool = False


def run_rewind(request: RewindRequest) -> tuple[int, str]:
    """(exit code, what to print on standard output)."""
    chosen = sum((request.to is not None, request.list_points, request.undo))
    if chosen != 1:
        raise RewindCommandError("give one of --to N, --list or --undo", EXIT_USAGE)
    root = find_workspace_root(request.cwd)
    store = SessionStore(sessions_dir())
    loaded = _session(store, root, request.session_id)
    # The session's own workspace (--session may name one of another folder).
    if loaded.info.workspace and Path(loaded.info.workspace).is_dir():
        root = Path(loaded.info.workspace)
    checkpointer = _checkpointer(root)
    points = restore_points(checkpointer, loaded.messages)
    if request.list_points:
        return EXIT_OK, _list(loaded, points, request.json_output)
    if request.undo:
        return _undo(store, loaded, checkpointer, request)
    assert request.to is not None
    point = next((p for p in points if p.index == request.to), None)
    if point is None:
        raise RewindCommandError(f"no prompt {request.to} in session {loaded.info.id} "
                                 f"(it has {len(points)}; see loom rewind --list)")
    plan: RestorePlan | None = None
    try:
        if request.mode.code:
            plan = plan_for(checkpointer, point, session_id=loaded.info.id)
        if not request.yes:
            return EXIT_OK, _preview(loaded, point, request.mode, plan, request)
        writer, loaded = _open(store, loaded)
        try:
            transcript = Transcript(loaded.messages, writer)
            outcome = rewind(transcript, checkpointer, point, request.mode, plan=plan,
                             include_conflicts=request.include_conflicts, session_id=loaded.info.id)
        finally:
            writer.close()
    except (RewindError, StalePlan) as error:
        raise RewindCommandError(str(error)) from None
    result = outcome.restore
    data = {"session": loaded.info.id, "to": point.index, "mode": request.mode.value, "applied": True,
            "files": [_change_data(c) for c in (plan.changes if plan else ())],
            "restored": [c.path for c in result.restored] if result else [],
            "skipped": [c.path for c in result.skipped] if result else [],
            "errors": list(result.errors) if result else [],
            "messages": len(transcript.messages), "undo": "loom rewind --undo"}
    if request.json_output:
        return (EXIT_ERROR if data["errors"] else EXIT_OK), json.dumps(data)
    lines = [f"Rewound session {loaded.info.id} to before prompt {point.index} ({_what(request.mode)})."]
    if result is not None:
        lines.append(_restored_line(len(result.restored), result.skipped))
        lines += [f"  could not restore {e}" for e in result.errors]
    if request.mode.conversation:
        lines.append(f"The conversation now ends just before prompt {point.index}; the session file keeps what "
                     "followed.")
    lines.append("To undo: loom rewind --undo --yes")
    return (EXIT_ERROR if result and result.errors else EXIT_OK), "\n".join(lines)


# --- undo ------------------------------------------------------------------------------


def _undo(store: SessionStore, loaded: LoadedSession, checkpointer: Snapshots | None,
          request: RewindRequest) -> tuple[int, str]:
    last = loaded.last_rewind
    if last is None:
        raise RewindCommandError(f"session {loaded.info.id} has no rewind to undo")
    previous: tuple[Message, ...] | None = last.before if last.mode in ("both", "conversation") else None
    note = None
    if previous is not None and last.added_since:
        previous, note = None, "the conversation went on after the rewind, so it is kept as it is"
    try:
        plan = plan_undo(checkpointer, last.undo_snapshot, session_id=loaded.info.id)
        if not request.yes:
            return EXIT_OK, _undo_preview(loaded, plan, previous, note, request)
        writer, loaded = _open(store, loaded)
        try:
            transcript = Transcript(loaded.messages, writer)
            outcome = undo_rewind(transcript, checkpointer, undo_snapshot=last.undo_snapshot, previous=previous,
                                  plan=plan, include_conflicts=request.include_conflicts,
                                  session_id=loaded.info.id)
        finally:
            writer.close()
    except (RewindError, StalePlan) as error:
        raise RewindCommandError(str(error)) from None
    result = outcome.restore
    if request.json_output:
        return EXIT_OK, json.dumps({"session": loaded.info.id, "undo": True, "applied": True,
                                    "restored": [c.path for c in result.restored] if result else [],
                                    "skipped": [c.path for c in result.skipped] if result else [],
                                    "errors": list(result.errors) if result else [],
                                    "conversation_restored": outcome.conversation_restored, "note": note})
    lines = [f"Undid the last rewind of session {loaded.info.id}."]
    if result is not None:
        lines.append(_restored_line(len(result.restored), result.skipped))
        lines += [f"  could not restore {e}" for e in result.errors]
    if outcome.conversation_restored:
        lines.append(f"The conversation is back ({_messages(len(previous or ()))}).")
    if note:
        lines.append(f"Note: {note}.")
    return EXIT_OK, "\n".join(lines)


def _undo_preview(loaded: LoadedSession, plan: RestorePlan | None, previous: Sequence[Message] | None,
                  note: str | None, request: RewindRequest) -> str:
    if request.json_output:
        return json.dumps({"session": loaded.info.id, "undo": True, "applied": False,
                           "files": [_change_data(c) for c in (plan.changes if plan else ())],
                           "conversation_messages": len(previous) if previous is not None else None,
                           "note": note})
    lines = [f"Undo the last rewind of session {loaded.info.id}:"]
    lines += _plan_lines(plan, request.include_conflicts) if plan is not None else ["Files: none were restored."]
    if previous is not None:
        lines.append(f"Conversation: back to {_messages(len(previous))}.")
    if note:
        lines.append(f"Note: {note}.")
    lines += _diffs(plan, request.include_conflicts)
    lines.append("Nothing was changed: add --yes to undo.")
    return "\n".join(lines)


# --- output --------------------------------------------------------------------------


def _list(loaded: LoadedSession, points: Sequence[RestorePoint], json_output: bool) -> str:
    if json_output:
        return json.dumps({"session": loaded.info.id, "points": [
            {"index": p.index, "time": p.time, "prompt": p.text, "files_changed": list(p.files_changed),
             "code": p.can_restore_code} for p in points]})
    if not points:
        return f"Session {loaded.info.id} has no prompts."
    lines = [f"Prompts of session {loaded.info.id} (rewind to just before one with: loom rewind --to N):"]
    for point in points:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(point.time)) if point.time else "-"
        text = " ".join(point.text.split())
        text = text if len(text) <= 60 else text[:59] + "…"
        if not point.can_restore_code:
            files = "files: no snapshot"
        else:
            count = len(point.files_changed)
            files = f"{count} file{'s' if count != 1 else ''} changed" if count else "no file changed"
        lines.append(f"{point.index:>4}  {when}  {text}  ({files})")
        for path in point.files_changed[:10]:
            lines.append(f"        {path}")
        if len(point.files_changed) > 10:
            lines.append(f"        … and {len(point.files_changed) - 10} more")
    return "\n".join(lines)


def _preview(loaded: LoadedSession, point: RestorePoint, mode: RewindMode, plan: RestorePlan | None,
             request: RewindRequest) -> str:
    kept = len(loaded.messages) - _dropped(loaded.messages, point) if mode.conversation else len(loaded.messages)
    if request.json_output:
        return json.dumps({"session": loaded.info.id, "to": point.index, "mode": mode.value, "applied": False,
                           "prompt": point.text, "files": [_change_data(c) for c in (plan.changes if plan else ())],
                           "left_out": sorted({i.path for i in (*plan.target.left_out, *plan.current.left_out)})
                           if plan else [],
                           "messages_before": len(loaded.messages), "messages_after": kept})
    lines = [f"Rewind session {loaded.info.id} to before prompt {point.index} (\"{_one_line(point.text)}\"): "
             f"{_what(mode)}."]
    if plan is not None:
        lines += _plan_lines(plan, request.include_conflicts)
    if mode.conversation:
        lines.append(f"Conversation: {_messages(len(loaded.messages))} -> {kept} (prompt {point.index} and what "
                     "followed leave it; the session file keeps them).")
    lines += _diffs(plan, request.include_conflicts)
    lines.append("Nothing was changed: add --yes to rewind.")
    return "\n".join(lines)


def _left_out_lines(plan: RestorePlan) -> list[str]:
    """The files the snapshots do not hold (never restored, deleted or read)."""
    items = {item.path: item for item in (*plan.target.left_out, *plan.current.left_out)}
    if not items:
        return []
    shown = [f"{item.path} ({item.size / 1e6:.1f} MB{', over the total' if item.reason == 'over_total' else ''})"
             for item in sorted(items.values(), key=lambda i: i.path)[:10]]
    more = f", and {len(items) - 10} more" if len(items) > 10 else ""
    return [f"Left alone, too big to keep in snapshots: {', '.join(shown)}{more}."]


def _plan_lines(plan: RestorePlan, include_conflicts: bool) -> list[str]:
    if plan.empty:
        return ["Files: nothing to restore (they are as they were then).", *_left_out_lines(plan)]
    lines = [f"Files ({len(plan.changes)}):"]
    for change in plan.changes:
        label = {"modify": "restore", "recreate": "recreate", "delete": "delete"}[change.action]
        if change.blocked is not None:
            lines.append(f"  keep      {change.path}  (left alone: {change.blocked})")
        elif change.conflict and not include_conflicts:
            lines.append(f"  conflict  {change.path}  (changed outside Loom since then; left alone, "
                         "--include-conflicts to restore it)")
        else:
            note = "  (created since)" if change.action == "delete" else ""
            conflict = "  (changed outside Loom since then)" if change.conflict else ""
            lines.append(f"  {label:<9} {change.path}{note}{conflict}")
    return lines + _left_out_lines(plan)


def _diffs(plan: RestorePlan | None, include_conflicts: bool) -> list[str]:
    if plan is None:
        return []
    lines: list[str] = []
    for change in plan.applied(include_conflicts):
        if change.binary:
            lines.append(f"Binary file {change.path} differs")
        elif change.diff:
            lines.append(change.diff.rstrip("\n"))
    return lines


def _change_data(change: FileChange) -> dict[str, Any]:
    return {"path": change.path, "action": change.action, "conflict": change.conflict, "blocked": change.blocked,
            "binary": change.binary, "diff": change.diff}


def _restored_line(restored: int, skipped: Sequence[FileChange]) -> str:
    line = f"Files: {restored} restored"
    if skipped:
        line += f", {len(skipped)} left alone ({', '.join(c.path for c in skipped[:5])}" \
                f"{', …' if len(skipped) > 5 else ''})"
    return line + "."


def _messages(count: int) -> str:
    return f"{count} message{'' if count == 1 else 's'}"


def _what(mode: RewindMode) -> str:
    return {RewindMode.BOTH: "code and conversation", RewindMode.CODE: "code only",
            RewindMode.CONVERSATION: "conversation only"}[mode]


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"


def _dropped(messages: Sequence[Message], point: RestorePoint) -> int:
    index = next((i for i, m in enumerate(messages) if m.id == point.prompt_id), len(messages))
    return len(messages) - index


# --- where things are ----------------------------------------------------------------


def _session(store: SessionStore, root: Path, session_id: str | None) -> LoadedSession:
    try:
        if session_id:
            return store.load(session_id)
        latest, _ = store.latest(root)
    except SessionError as error:
        raise RewindCommandError(str(error)) from None
    if latest is None:
        raise RewindCommandError(f"no session in {root} (use --session ID)")
    return latest


def _open(store: SessionStore, loaded: LoadedSession) -> tuple[Any, LoadedSession]:
    try:
        return store.resume(loaded)
    except SessionError as error:  # SessionLocked: a running loom has it
        raise RewindCommandError(f"{error}; rewind it there with /rewind") from None


def _checkpointer(root: Path) -> Snapshots | None:
    from .bootstrap import make_checkpointer
    from .settings import ConfigError, SnapshotSettings, load_settings
    from .workspace_records import WorkspaceRecords

    try:
        chosen = load_settings(root, user_config_file(),
                               trusted_hash=WorkspaceRecords(data_dir()).trusted_hash(root)).settings.snapshots
    except ConfigError:
        chosen = SnapshotSettings()
    return make_checkpointer(root, chosen)
