"""The memories of an agent tree: each agent's own notes, the tree's shared notes, and
what a parent handed its child — held in the process, never written to disk.

Who owns what (see docs/memory-tree.md for how a model sees it):

- ``local``: one agent's notes for its task. A new empty store per agent; it goes with
  the agent. A sub-agent's local notes reach no one unless it copies them to ``shared``
  (or the project's ``global`` memory) itself: the parent gets the child's answer and
  what the child put in ``shared``, nothing else.
- ``shared``: one store for the whole tree — the top agent and every sub-agent at any
  depth read and write the same one, so a sub-agent can leave a finding its parent and
  siblings see. It lives as long as the top agent's session (a ``/clear`` starts a new
  one) and is not saved with the session.
- ``inherited``: a frozen copy, made when the child is started, of the parent's
  ``local`` notes over what the parent itself inherited; read-only to the child. The top
  agent has none.

Stores are thread-safe: parallel sub-agents run in one event loop and tools may run in
worker threads, so every compare-and-set happens under one lock per store. No operation
waits while holding it.
"""

from __future__ import annotations

import builtins
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..redact import redact_secrets
from .entries import Entry, MemoryOperationError, MemoryStore, ReadOnlyScope, Scope, StaleVersion
from .tree_paths import DEFAULT_LIMITS, TreeLimits, content_size, entry_path, folder_path, under

Redact = Callable[[str], str]


class TreeStore:
    """One writable scope held in memory. Each write gets the next number of the store's
    counter as its version, so a version is never reused — not even by an entry deleted
    and made again, which a stale writer could otherwise mistake for the one it read."""

    def __init__(self, scope: Scope, *, redact: Redact = redact_secrets, limits: TreeLimits = DEFAULT_LIMITS) -> None:
        self._scope = scope
        self._redact = redact
        self.limits = limits
        self._entries: dict[str, Entry] = {}
        self._bytes = 0  # the content of every entry, for the store's limit
        self._versions = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def scope(self) -> Scope:
        return self._scope

    @property
    def writable(self) -> bool:
        return True

    def emptied(self) -> TreeStore:
        """A new empty store of the same scope, redaction and limits."""
        return TreeStore(self._scope, redact=self._redact, limits=self.limits)

    def snapshot(self) -> tuple[Entry, ...]:
        """Every entry as it is now (entries are immutable: later writes do not reach it)."""
        with self._lock:
            return tuple(self._entries.values())

    def get(self, path: str) -> Entry | None:
        path = entry_path(path, self.limits)
        with self._lock:
            return self._entries.get(path)

    def put(self, path: str, content: str, *, expected: str | None) -> Entry:
        path = self._new_path(path)
        content = self._redact(content)  # before it is stored: nothing holds the secret after
        size = content_size(content)
        if size > self.limits.max_entry_bytes:
            raise MemoryOperationError(f"{path} would hold {size} bytes; an entry holds at most "
                                       f"{self.limits.max_entry_bytes}")
        with self._lock:
            current = self._entries.get(path)
            _check_version(path, current, expected)
            if current is None:
                self._check_room(path)
            total = self._bytes + size - (content_size(current.content) if current is not None else 0)
            if total > self.limits.max_total_bytes:
                raise MemoryOperationError(f"{self._scope} memory is full ({self.limits.max_total_bytes} bytes); "
                                           "delete or shorten entries first")
            entry = Entry(path, content, str(next(self._versions)))
            self._entries[path] = entry
            self._bytes = total
            return entry

    def delete(self, path: str, *, expected: str) -> None:
        path = entry_path(path, self.limits)
        with self._lock:
            current = _matching(path, self._entries.get(path), expected)
            del self._entries[path]
            self._bytes -= content_size(current.content)

    def rename(self, path: str, new_path: str, *, expected: str) -> Entry:
        path = entry_path(path, self.limits)
        new_path = self._new_path(new_path)
        if new_path == path:
            raise MemoryOperationError(f"{path} already has that name")
        with self._lock:
            current = _matching(path, self._entries.get(path), expected)
            if new_path in self._entries:
                raise MemoryOperationError(f"cannot rename {path} to {new_path}: {new_path} already exists")
            self._check_room(new_path, leaving=path)
            del self._entries[path]
            moved = Entry(new_path, current.content, str(next(self._versions)))
            self._entries[new_path] = moved
            return moved

    def list(self, folder: str = "") -> builtins.list[Entry]:
        folder = folder_path(folder, self.limits)
        with self._lock:
            found = [entry for path, entry in self._entries.items() if under(path, folder)]
        return sorted(found, key=lambda entry: entry.path)

    def _new_path(self, path: str) -> str:
        path = entry_path(path, self.limits)
        if self._redact(path) != path:
            raise MemoryOperationError("that memory path looks like it holds a secret; name the entry without it")
        return path

    def _check_room(self, path: str, *, leaving: str | None = None) -> None:
        """A new entry at ``path`` fits: under the entry limit, and no entry is a folder
        of another (as on disk, where the project's memory lives). Called under the lock."""
        if leaving is None and len(self._entries) >= self.limits.max_entries:
            raise MemoryOperationError(f"{self._scope} memory holds its limit of {self.limits.max_entries} "
                                       "entries; delete or merge some first")
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in self._entries and folder != leaving:
                raise MemoryOperationError(f"{folder} is an entry, so it cannot be a folder of {path}")
        inside = next((p for p in self._entries if p.startswith(path + "/") and p != leaving), None)
        if inside is not None:
            raise MemoryOperationError(f"{path} is a folder (it holds {inside}); choose another name")


class FrozenStore:
    """A read-only scope: entries fixed when it was made. Every write raises
    :class:`ReadOnlyScope` naming where to write instead."""

    def __init__(self, scope: Scope, entries: Iterable[Entry], *, limits: TreeLimits = DEFAULT_LIMITS) -> None:
        self._scope = scope
        self.limits = limits
        self._entries: Mapping[str, Entry] = MappingProxyType({entry.path: entry for entry in entries})

    @property
    def scope(self) -> Scope:
        return self._scope

    @property
    def writable(self) -> bool:
        return False

    def get(self, path: str) -> Entry | None:
        return self._entries.get(entry_path(path, self.limits))

    def put(self, path: str, content: str, *, expected: str | None) -> Entry:
        raise self._refusal(path)

    def delete(self, path: str, *, expected: str) -> None:
        raise self._refusal(path)

    def rename(self, path: str, new_path: str, *, expected: str) -> Entry:
        raise self._refusal(path)

    def list(self, folder: str = "") -> builtins.list[Entry]:
        folder = folder_path(folder, self.limits)
        return sorted((e for path, e in self._entries.items() if under(path, folder)), key=lambda e: e.path)

    def _refusal(self, path: str) -> ReadOnlyScope:
        return ReadOnlyScope(f"{path} is in {self._scope} memory, which is read-only (your parent agent handed "
                             "it to you); write to local or shared memory instead")


def _check_version(path: str, current: Entry | None, expected: str | None) -> None:
    """Refuse a write whose caller did not read the entry as it is now."""
    if current is None:
        if expected is not None:
            raise StaleVersion(path, None)
    elif expected != current.version:
        raise StaleVersion(path, current)


def _matching(path: str, current: Entry | None, expected: str) -> Entry:
    """The entry a caller read as version ``expected``, still as it was."""
    if current is None or current.version != expected:
        raise StaleVersion(path, current)
    return current


@dataclass(frozen=True)
class TreeMemory:
    """One agent's scopes in its run tree (``global`` is added beside them by whoever
    holds the project's memory)."""

    local: TreeStore
    shared: TreeStore
    inherited: FrozenStore | None = None
    _scopes: Mapping[Scope, MemoryStore] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        scopes: dict[Scope, MemoryStore] = {Scope.LOCAL: self.local, Scope.SHARED: self.shared}
        if self.inherited is not None:
            scopes[Scope.INHERITED] = self.inherited
        object.__setattr__(self, "_scopes", MappingProxyType(scopes))

    @classmethod
    def start(cls, *, redact: Redact = redact_secrets, limits: TreeLimits = DEFAULT_LIMITS) -> TreeMemory:
        """A top agent's: its own local notes and a new tree's shared ones, nothing inherited."""
        return cls(TreeStore(Scope.LOCAL, redact=redact, limits=limits),
                   TreeStore(Scope.SHARED, redact=redact, limits=limits))

    def child(self) -> TreeMemory:
        """A sub-agent's, made as it is started: a new empty local store, the same shared
        one, and a frozen copy of this agent's local notes over what it inherited itself
        (its own note wins where both name the same path)."""
        handed = {entry.path: entry for entry in (self.inherited.list() if self.inherited is not None else ())}
        handed.update((entry.path, entry) for entry in self.local.snapshot())
        return TreeMemory(self.local.emptied(), self.shared,
                          FrozenStore(Scope.INHERITED, handed.values(), limits=self.local.limits))

    def renewed(self) -> TreeMemory:
        """A new session's (``/clear``): new local and shared stores, nothing kept."""
        return TreeMemory(self.local.emptied(), self.shared.emptied())

    def scopes(self, beside: Mapping[Scope, MemoryStore] | None = None) -> Mapping[Scope, MemoryStore]:
        """The stores by scope for a tool call's context (a read-only mapping): this
        tree's, with those of ``beside`` (the project's ``global`` store) added."""
        if not beside:
            return self._scopes
        return MappingProxyType({**beside, **self._scopes})
