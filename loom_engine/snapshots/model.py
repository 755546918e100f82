"""The data of snapshots and restores: frozen records shared by the engine, the chat and ``loom rewind``.

Kinds of snapshot, by who made the changes since the one before:
  prompt          before a user prompt: changes since came from outside Loom (the user between runs)
  check           taken to look at the workspace now (a preview): changes since came from outside Loom
  before_restore  taken just before a restore (the point an undo goes back to): outside Loom
  tool            after a bash call or a sub-agent: the changes since were the assistant's
  run_end         when a run ends: the assistant's
  restored        right after a restore: Loom's own
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

SnapshotKind = Literal["prompt", "check", "before_restore", "tool", "run_end", "restored"]

# The changes that led to a snapshot of these kinds were Loom's own (the assistant's or a restore's).
LOOM_KINDS: frozenset[str] = frozenset({"tool", "run_end", "restored"})

FileAction = Literal["modify", "delete", "recreate"]


class RewindMode(StrEnum):
    """What a rewind puts back (Claude Code's menu)."""

    BOTH = "both"  # restore code and conversation
    CONVERSATION = "conversation"  # conversation only
    CODE = "code"  # code only

    @property
    def code(self) -> bool:
        return self is not RewindMode.CONVERSATION

    @property
    def conversation(self) -> bool:
        return self is not RewindMode.CODE


@dataclass(frozen=True)
class SnapshotCaps:
    """Limits on what a snapshot holds, and how many prompts' snapshots are kept."""

    max_file_bytes: int = 2 * 1024 * 1024  # a bigger file is left out (and listed)
    max_total_bytes: int = 512 * 1024 * 1024  # files beyond this total are left out (and listed)
    keep_prompts: int = 100  # snapshots of older prompts are pruned
    # More files than this to look at in one snapshot (Loom started in a home folder,
    # say): snapshots are turned off for the workspace rather than slow every prompt.
    max_files: int = 200_000


@dataclass(frozen=True)
class LeftOut:
    """A file a snapshot does not hold, and why (``too_big`` or ``over_total``)."""

    path: str
    size: int
    reason: Literal["too_big", "over_total"]


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of the workspace: a tree in the shadow repository and what it is for."""

    id: int  # increasing within the workspace
    tree: str
    time: float  # seconds since the epoch
    kind: SnapshotKind
    session_id: str | None = None
    prompt_id: str | None = None  # the prompt message it was taken before (kind "prompt")
    prompt_text: str = ""  # the prompt's start, for lists
    total_bytes: int = 0
    left_out: tuple[LeftOut, ...] = ()

    @property
    def by_loom(self) -> bool:
        return self.kind in LOOM_KINDS


@dataclass(frozen=True)
class RestorePoint:
    """A prompt of the conversation one can rewind to (to just before it was sent)."""

    index: int  # 1-based, in the conversation as it is now
    prompt_id: str  # the prompt message's id
    text: str  # the prompt as typed
    time: float | None  # when it was sent (None: no snapshot was taken then)
    files_changed: tuple[str, ...]  # what the run of this prompt changed (per the snapshots)
    snapshot: Snapshot | None  # the workspace just before it (None: code cannot be restored)

    @property
    def can_restore_code(self) -> bool:
        return self.snapshot is not None


@dataclass(frozen=True)
class FileChange:
    """What a restore does to one path.

    ``modify``: the file gets its content at the snapshot; ``recreate``: it was deleted
    since and comes back; ``delete``: the assistant created it since, it goes.
    ``conflict``: it was also changed outside Loom since the snapshot (in an editor, say):
    left alone unless the user asks. ``blocked``: why it is never touched, whatever the
    user says (created outside Loom, too big to keep a copy of) — None when it can be.
    """

    path: str
    action: FileAction
    diff: str  # unified diff from the current content to the restored one ("" for binary)
    conflict: bool = False
    blocked: str | None = None
    binary: bool = False

    def applies(self, include_conflicts: bool) -> bool:
        return self.blocked is None and (include_conflicts or not self.conflict)


@dataclass(frozen=True)
class RestorePlan:
    """The preview of restoring the workspace to ``target``: nothing is changed yet."""

    target: Snapshot
    current: Snapshot  # the workspace when the plan was made (an apply checks it is unchanged)
    changes: tuple[FileChange, ...]

    @property
    def conflicts(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.conflict and c.blocked is None)

    @property
    def blocked(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.blocked is not None)

    def applied(self, include_conflicts: bool = False) -> tuple[FileChange, ...]:
        """The changes an apply would make."""
        return tuple(c for c in self.changes if c.applies(include_conflicts))

    @property
    def empty(self) -> bool:
        return not self.changes


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did."""

    restored: tuple[FileChange, ...]  # the changes made
    skipped: tuple[FileChange, ...]  # conflicts and blocked paths left alone
    undo: Snapshot  # the workspace just before the restore: restoring it undoes this one
    errors: tuple[str, ...] = field(default=())  # "path: reason" for changes that failed

    def reminder(self, what: str) -> str:
        """The note the model gets in its next request (``what``: e.g. 'before prompt 2')."""
        return reverted_reminder(self.restored, what)


class TooManyFiles(Exception):
    """The workspace has more files than snapshots are taken of (``SnapshotCaps.max_files``)."""


class StalePlan(Exception):
    """The workspace changed between the preview and the apply: make the plan again."""


def reverted_reminder(changes: tuple[FileChange, ...], what: str) -> str:
    words = {"modify": "restored", "recreate": "restored (it had been deleted)", "delete": "deleted"}
    lines = [f"- {c.path}: {words[c.action]}" for c in changes]
    return ("[The user rewound files to how they were " + what + ". Files reverted:\n" + "\n".join(lines)
            + "\nRead a file again before editing it; what you remember of it may be out of date.]")
