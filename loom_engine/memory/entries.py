"""The contract every memory scope keeps: versioned text entries under relative paths.

A scope is one place memories live — the project's long-term folder on disk (``global``)
or a run tree's in-process stores (``local``, ``shared``, ``inherited``). The ``memory``
tool works on any of them through :class:`MemoryStore`: it reads an entry, changes its
text, and writes it back naming the version it read. A store refuses a write whose
expected version is not the current one (:class:`StaleVersion`, carrying the entry as it
now is), so two agents writing the same entry never silently overwrite each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Scope(StrEnum):
    """Who owns a memory and who sees it."""

    LOCAL = "local"  # one agent's notes for its task; gone when it ends unless promoted
    SHARED = "shared"  # read and written by every agent of one run's tree
    INHERITED = "inherited"  # what a parent handed its child; read-only to the child
    GLOBAL = "global"  # the project's long-term memory folder, across sessions


@dataclass(frozen=True)
class Entry:
    """One memory file: ``path`` relative to its scope's root, POSIX separators."""

    path: str
    content: str
    # Changes on every write; opaque to callers (a counter in memory, a content hash on
    # disk). Compare it only for equality.
    version: str


class MemoryOperationError(Exception):
    """A memory operation that cannot be done; its message is one line the model can read."""


class StaleVersion(MemoryOperationError):
    """The entry changed since the caller read it; ``current`` is what it holds now
    (None: it was deleted)."""

    def __init__(self, path: str, current: Entry | None) -> None:
        self.current = current
        state = "was deleted" if current is None else "was changed by another agent"
        super().__init__(f"{path} {state} since you read it; read it again and redo the change")


class ReadOnlyScope(MemoryOperationError):
    """A write to a scope this agent may only read (``inherited``)."""


class MemoryStore(Protocol):
    """One scope's entries. Paths are validated by the store (no ``..``, no absolute
    paths, nothing outside its root after links); a bad one raises :class:`MemoryOperationError`."""

    @property
    def scope(self) -> Scope: ...

    @property
    def writable(self) -> bool: ...

    def get(self, path: str) -> Entry | None:
        """The entry at ``path``; None when there is none."""
        ...

    def list(self, folder: str = "") -> list[Entry]:
        """Every entry under ``folder`` ("" for all), sorted by path."""
        ...

    def put(self, path: str, content: str, *, expected: str | None) -> Entry:
        """Write ``content`` at ``path``. ``expected`` is the version the caller read, or
        None for "must not exist yet". Raises :class:`StaleVersion` when it does not
        match, :class:`ReadOnlyScope` on a read-only scope."""
        ...

    def delete(self, path: str, *, expected: str) -> None:
        """Remove the entry at ``path`` if its version is still ``expected``."""
        ...

    def rename(self, path: str, new_path: str, *, expected: str) -> Entry:
        """Move the entry (version ``expected``) to ``new_path``, which must not exist."""
        ...
