"""Files a PostToolUse hook rewrote after the tool wrote them (a formatter: ``ruff
format``, ``prettier --write``, a ``sed``).

Without this the model would go on from the text it sent, and its next edit of the file
would be refused as "changed on disk since you last read it". As in Claude Code, the
file's read record is brought up to date — the hook's change is part of the tool's work,
not someone else's — and the model is told what the file now holds: the whole file when
small, else a diff of the hook's change, capped.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .base import FileRecord, ToolSessionState

# The whole new text up to this size; above it, a diff of what the hook changed.
WHOLE_FILE_CHARS = 8_000
MAX_DIFF_CHARS = 8_000


def written_by_call(before: Mapping[str, FileRecord], state: ToolSessionState) -> tuple[Path, ...]:
    """The files a call wrote: those whose read record it set anew (the file tools record
    what they wrote, so the next edit is checked against it)."""
    return tuple(Path(key) for key, record in state.read_files.items() if before.get(key) is not record)


@dataclass(frozen=True)
class WrittenFiles:
    """The files a tool wrote, as it left them, before the PostToolUse hooks ran."""

    contents: Mapping[Path, bytes]

    @classmethod
    def capture(cls, paths: Iterable[Path]) -> WrittenFiles:
        contents: dict[Path, bytes] = {}
        for path in paths:
            try:
                contents[path] = path.read_bytes()
            except OSError:
                continue  # gone or unreadable: nothing to compare
        return cls(contents)

    def rewritten(self, state: ToolSessionState, root: Path) -> str:
        """After the hooks: refresh the read record of each file they changed, and a note
        for the model with what each now holds ("" when none changed)."""
        notes = []
        for path, old in self.contents.items():
            try:
                new = path.read_bytes()
            except OSError:
                continue  # a hook deleted it: the next edit says the file is missing
            if new == old:
                continue
            state.record_read(path)
            notes.append(_note(_shown(path, root), old.decode("utf-8", "replace"), new.decode("utf-8", "replace")))
        return "\n\n".join(notes)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _note(shown: str, old: str, new: str) -> str:
    if len(new) <= WHOLE_FILE_CHARS:
        lines = new.split("\n")
        if lines[-1] == "":
            lines.pop()  # the file's last newline ends its last line; it opens none
        numbered = "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, 1))
        return (f"[A PostToolUse hook changed {shown} after this call wrote it. Its content now (edit against "
                f"this text):\n{numbered}\n]")
    diff = "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"{shown} (as written)", tofile=f"{shown} (after the hook)"))
    if len(diff) > MAX_DIFF_CHARS:
        kept = diff[:MAX_DIFF_CHARS].rpartition("\n")[0]  # whole lines only
        diff = kept + f"\n[... diff cut at {MAX_DIFF_CHARS:,} characters; read_file shows the file]"
    return f"[A PostToolUse hook changed {shown} after this call wrote it (edit against the new text):\n{diff}\n]"
