"""The one line that says rewind's snapshots of the files are off or limited here, and
what rewind can still do: for the chat's transcript and `loom run`'s stderr.

Each reason is said once (the caller keeps the keys it has said): git missing is known
when the agent is built, too many files and a failed snapshot only after a prompt's
snapshot was tried, so callers ask again when a run ends. Kept free of Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .wording import plural

if TYPE_CHECKING:
    from loom_engine.checkpoints import Checkpoints

SnapshotProblem = Literal["no_git", "too_many_files", "failed"]

# A failure's message can be a git error several lines long: its first line, cut.
_MESSAGE_CHARS = 120


@dataclass(frozen=True)
class SnapshotNotice:
    key: SnapshotProblem  # said once per chat (or run) each
    text: str


def snapshot_notices(checkpoints: Checkpoints | None, rewind: str = "/rewind") -> tuple[SnapshotNotice, ...]:
    """Why the agent's snapshots (``agent.checkpoints``) are limited or off, if they are;
    ``rewind`` names the command in the line (`loom run` says ``loom rewind``)."""
    if checkpoints is None:  # turned off in the settings: the user's choice, nothing to say
        return ()
    from loom_engine.snapshots.checkpoints import Checkpointer
    from loom_engine.snapshots.preimages import PreimageCheckpointer

    notices: list[SnapshotNotice] = []
    if isinstance(checkpoints, PreimageCheckpointer):
        notices.append(SnapshotNotice(
            "no_git", f"git is not installed: {rewind} can restore the conversation, and only files Loom's "
            "edit tools changed"))
        too_many, limit = False, checkpoints.caps.max_files
    elif isinstance(checkpoints, Checkpointer):
        too_many, limit = checkpoints.too_many_files, checkpoints.caps.max_files
    else:  # an embedder's own snapshots: nothing known to say about them
        return ()
    failure = checkpoints.last_failure
    if too_many:
        notices.append(SnapshotNotice(
            "too_many_files", f"snapshots are off: more than {plural(limit, 'file')} here ([snapshots] max_files); "
            f"{rewind} can rewind only the conversation"))
    elif failure is not None:
        message = failure.message.strip()
        first = message.splitlines()[0] if message else "unknown error"
        if len(first) > _MESSAGE_CHARS:
            first = first[:_MESSAGE_CHARS - 1] + "…"
        notices.append(SnapshotNotice(
            "failed", f"a snapshot of the files failed ({first}); {rewind} can still rewind the conversation, "
            "maybe not the files"))
    return tuple(notices)
