"""Rewind: put back the code, the conversation, or both, to just before a prompt — and undo it.

The same functions serve the chat (the live agent's ``agent.transcript``) and
``loom rewind`` (a :class:`Transcript` over a session file opened for appending). The
conversation is never cut in the file: a rewind is one more record, so the abandoned
branch stays in the session; loading the session gives the rewound conversation.
When files were reverted, the model is told which in a reminder message, read with
the next request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import Message
from ..transcript import Transcript
from .model import RestorePlan, RestorePoint, RestoreResult, RewindMode, reverted_reminder
from .restore import Snapshots, apply_restore, plan_restore


class RewindError(Exception):
    """A rewind that cannot be done, with a one-line reason for the user."""


@dataclass(frozen=True)
class RewindOutcome:
    """What a rewind did."""

    mode: RewindMode
    point: RestorePoint
    restore: RestoreResult | None  # None: the code was not asked for
    previous: tuple[Message, ...]  # the conversation just before the rewind (for an undo)
    reminder: str | None  # the note added for the model (None: no file was reverted)

    @property
    def prompt_text(self) -> str:
        """The prompt rewound to (the chat puts it back in the input to edit and resend)."""
        return self.point.text


@dataclass(frozen=True)
class UndoOutcome:
    restore: RestoreResult | None  # None: the rewind being undone did not restore files
    conversation_restored: bool
    reminder: str | None
    note: str | None = None  # why part of it was not undone, in words


def plan_for(checkpointer: Snapshots | None, point: RestorePoint, *, session_id: str | None = None
             ) -> RestorePlan:
    """The preview of restoring the code to just before ``point``."""
    if checkpointer is None or point.snapshot is None:
        raise RewindError(f"no snapshot of the files was taken before prompt {point.index}; "
                          "only the conversation can be rewound")
    return plan_restore(checkpointer, point.snapshot, session_id=session_id)


def rewind(transcript: Transcript, checkpointer: Snapshots | None, point: RestorePoint, mode: RewindMode, *,
           plan: RestorePlan | None = None, include_conflicts: bool = False,
           session_id: str | None = None) -> RewindOutcome:
    """Rewind to just before ``point``: the files (``plan``, or a fresh one) and/or the
    conversation, per ``mode``. Raises :class:`RewindError`, or
    :class:`~.model.StalePlan` when files changed since ``plan`` was made."""
    previous = transcript.messages
    if not any(m.id == point.prompt_id for m in previous):
        raise RewindError(f"prompt {point.index} is no longer in the conversation")
    restore: RestoreResult | None = None
    if mode.code:
        if plan is None:
            plan = plan_for(checkpointer, point, session_id=session_id)
        assert checkpointer is not None  # plan_for refused otherwise
        restore = apply_restore(checkpointer, plan, include_conflicts=include_conflicts, session_id=session_id)
    transcript.rewind_to(point.prompt_id, truncate=mode.conversation, mode=mode.value,
                         undo_snapshot=restore.undo.id if restore is not None else None)
    reminder = None
    if restore is not None and restore.restored:
        reminder = restore.reminder(f"before prompt {point.index} (\"{_short(point.text)}\")")
        transcript.append(Message.user(reminder, reminder=True, rewind=True))
    return RewindOutcome(mode=mode, point=point, restore=restore, previous=previous, reminder=reminder)


def plan_undo(checkpointer: Snapshots | None, undo_snapshot: int | None, *, session_id: str | None = None
              ) -> RestorePlan | None:
    """The preview of undoing a rewind's restore (None: it restored no files)."""
    if undo_snapshot is None:
        return None
    target = checkpointer.find(undo_snapshot) if checkpointer is not None else None
    if checkpointer is None or target is None:
        raise RewindError("the snapshot taken before that rewind is gone (pruned); its files cannot be put back")
    return plan_restore(checkpointer, target, session_id=session_id)


def undo_rewind(transcript: Transcript, checkpointer: Snapshots | None, *, undo_snapshot: int | None,
                previous: Sequence[Message] | None, plan: RestorePlan | None = None,
                include_conflicts: bool = False, session_id: str | None = None) -> UndoOutcome:
    """Undo a rewind: the files as they were just before it (``undo_snapshot``) and the
    conversation ``previous`` (None: leave the conversation as it is)."""
    restore: RestoreResult | None = None
    if plan is None:
        plan = plan_undo(checkpointer, undo_snapshot, session_id=session_id)
    if plan is not None and checkpointer is not None:
        restore = apply_restore(checkpointer, plan, include_conflicts=include_conflicts, session_id=session_id)
    if previous is not None:
        transcript.restore_history(previous, mode="undo",
                                   undo_snapshot=restore.undo.id if restore is not None else None)
    reminder = None
    if restore is not None and restore.restored:
        reminder = reverted_reminder(restore.restored, "just before their last rewind (they undid it)")
        transcript.append(Message.user(reminder, reminder=True, rewind=True))
    return UndoOutcome(restore=restore, conversation_restored=previous is not None, reminder=reminder)


def _short(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"
