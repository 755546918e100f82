"""The ``global`` scope on disk: one project's long-term memory folder.

Layout, in the user's data dir: ``memory/<project key>/`` (see :mod:`.project`) holding
``memories/`` (the entries; ``MEMORY.md`` is the index), ``proposals/`` (what a session's
end proposed, for the user to review) and ``write.lock``.

The entries are data the model wrote, so the folder is a cage: a path is relative, has
no ``..``, ``.`` or empty parts, and no part of it may be a symlink (each is checked
with ``lstat`` under the lock, and files are opened with ``O_NOFOLLOW``). Sizes are
capped per entry and in total; secrets are redacted before anything is written.

Versions are content hashes. Every write is compare-and-set under an ``flock`` on the
folder's lock file, so two Loom processes (two worktrees, two chats) never lose a write:
the second is refused with :class:`StaleVersion` and the entry as it now is.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..paths import data_dir
from ..private_files import FILE_MODE, private_folder
from ..redact import Redactor
from .entries import Entry, MemoryOperationError, Scope, StaleVersion
from .project import project_key
from .tree_paths import TreeLimits, entry_path

MEMORY_FOLDER = "memory"
ENTRIES = "memories"
PROPOSALS = "proposals"
LOCK_FILE = "write.lock"
INDEX_NAME = "MEMORY.md"
MAX_PATH_CHARS = 200
MAX_DEPTH = 4
_PATH_LIMITS = TreeLimits(max_path_chars=MAX_PATH_CHARS)


@dataclass(frozen=True)
class MemoryLimits:
    entry_bytes: int = 64_000
    total_bytes: int = 1_000_000
    entries: int = 500


def version_of(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def check_path(path: str) -> str:
    """``path`` as stored (POSIX, relative), or a one-line error naming what is wrong: the
    rules every scope's paths follow (``tree_paths.entry_path``), and a bounded depth on
    disk."""
    entry_path(path, _PATH_LIMITS)
    if path.count("/") >= MAX_DEPTH:
        raise MemoryOperationError(f"memory path {path!r} is more than {MAX_DEPTH} folders deep")
    return path


class MemoryFolder:
    """A :class:`~.entries.MemoryStore` over one folder on disk (the ``global`` scope)."""

    def __init__(self, root: Path, *, redactor: Redactor | None = None, limits: MemoryLimits | None = None) -> None:
        self.root = root
        self.entries_dir = root / ENTRIES
        self.proposals_dir = root / PROPOSALS
        self._lock_path = root / LOCK_FILE
        self._redactor = redactor or Redactor()
        self.limits = limits or MemoryLimits()

    @classmethod
    def for_project(cls, workspace_root: Path, *, base: Path | None = None,
                    redactor: Redactor | None = None) -> MemoryFolder:
        """The memory of the project ``workspace_root`` belongs to (shared by its worktrees)."""
        folder = (base or data_dir()) / MEMORY_FOLDER / project_key(workspace_root).key
        return cls(folder, redactor=redactor)

    @property
    def scope(self) -> Scope:
        return Scope.GLOBAL

    @property
    def writable(self) -> bool:
        return True

    # --- reading -------------------------------------------------------------------------

    def get(self, path: str) -> Entry | None:
        target = self._locate(check_path(path))
        text = _read_text(target)
        return None if text is None else Entry(path, text, version_of(text))

    def list(self, folder: str = "") -> list[Entry]:
        start = self._locate(check_path(folder)) if folder else self.entries_dir
        found: list[Entry] = []
        for path in sorted(self._walk(start)):
            relative = path.relative_to(self.entries_dir).as_posix()
            text = _read_text(path)
            if text is not None:
                found.append(Entry(relative, text, version_of(text)))
        return found

    def redact(self, text: str) -> str:
        """``text`` as this folder would store it (secrets removed)."""
        return self._redactor.redact(text)

    def index_text(self) -> str:
        entry = self.get(INDEX_NAME)
        return entry.content if entry is not None else ""

    # --- writing -------------------------------------------------------------------------

    def put(self, path: str, content: str, *, expected: str | None) -> Entry:
        path = check_path(path)
        content = self._redactor.redact(content)
        size = len(content.encode("utf-8"))
        if size > self.limits.entry_bytes:
            raise MemoryOperationError(f"{path}: {size:,} bytes is over the {self.limits.entry_bytes:,}-byte "
                                       "limit of one memory file; keep notes short or split them")
        with self._locked():
            target = self._locate(path, create_parents=True)
            current = self._current(path, target)
            self._check_expected(path, current, expected)
            self._check_room(path, size, 0 if current is None else len(current.content.encode("utf-8")))
            _write_file(target, content)
        return Entry(path, content, version_of(content))

    def delete(self, path: str, *, expected: str) -> None:
        path = check_path(path)
        with self._locked():
            target = self._locate(path)
            self._check_expected(path, self._current(path, target), expected)
            target.unlink()
            self._prune(target.parent)

    def rename(self, path: str, new_path: str, *, expected: str) -> Entry:
        path, new_path = check_path(path), check_path(new_path)
        with self._locked():
            source = self._locate(path)
            current = self._current(path, source)
            self._check_expected(path, current, expected)
            assert current is not None
            target = self._locate(new_path, create_parents=True)
            if os.path.lexists(target):
                raise MemoryOperationError(f"{new_path} already exists; delete it first or choose another name")
            os.rename(source, target)
            self._prune(source.parent)
        return Entry(new_path, current.content, current.version)

    def clear(self) -> int:
        """Remove every entry; how many there were."""
        with self._locked():
            entries = list(self._walk(self.entries_dir))
            for path in entries:
                path.unlink()
            for folder in sorted((p for p in self.entries_dir.rglob("*") if p.is_dir()), reverse=True):
                with contextlib.suppress(OSError):
                    folder.rmdir()
        return len(entries)

    # --- the cage ------------------------------------------------------------------------

    def _locate(self, path: str, *, create_parents: bool = False) -> Path:
        """``path`` under the entries folder; every existing part must be a real folder
        (the last a real file), never a link."""
        private_folder(self.entries_dir)
        here = self.entries_dir
        parts = path.split("/")
        for number, part in enumerate(parts):
            here = here / part
            try:
                mode = os.lstat(here).st_mode
            except FileNotFoundError:
                if number < len(parts) - 1 and create_parents:
                    os.mkdir(here, 0o700)
                continue
            last = number == len(parts) - 1
            if stat.S_ISLNK(mode):
                raise MemoryOperationError(f"{path}: a symlink in the memory folder is refused")
            if not last and not stat.S_ISDIR(mode):
                raise MemoryOperationError(f"{path}: {'/'.join(parts[:number + 1])} is a file, not a folder")
        return here

    def _walk(self, start: Path) -> Iterator[Path]:
        if not start.is_dir() or start.is_symlink():
            if start.is_file() and not start.is_symlink():
                yield start
            return
        for folder, dirs, files in os.walk(start, followlinks=False):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            for name in files:
                if name.startswith(".") and name.endswith(".tmp"):
                    continue  # a write in progress (or one a killed Loom left)
                path = Path(folder, name)
                if not path.is_symlink() and path.is_file():
                    yield path

    def _current(self, path: str, target: Path) -> Entry | None:
        text = _read_text(target)
        return None if text is None else Entry(path, text, version_of(text))

    @staticmethod
    def _check_expected(path: str, current: Entry | None, expected: str | None) -> None:
        if expected is None:
            if current is not None:
                raise StaleVersion(path, current)
        elif current is None or current.version != expected:
            raise StaleVersion(path, current)

    def _check_room(self, path: str, size: int, replaced: int) -> None:
        entries = list(self._walk(self.entries_dir))
        total = sum(p.stat().st_size for p in entries) - replaced + size
        if total > self.limits.total_bytes:
            raise MemoryOperationError(f"{path}: the project's memory would hold {total:,} bytes, over its "
                                       f"{self.limits.total_bytes:,}-byte limit; delete or shorten old notes")
        if replaced == 0 and len(entries) >= self.limits.entries:
            raise MemoryOperationError(f"{path}: the project's memory already holds {len(entries)} files, its "
                                       "limit; merge or delete old notes")

    def _prune(self, folder: Path) -> None:
        while folder != self.entries_dir and folder.is_relative_to(self.entries_dir):
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        private_folder(self.root)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


def _read_text(path: Path) -> str | None:
    """The file's text; None when there is none. A link or a non-file is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK):
            raise MemoryOperationError(f"{path.name}: a symlink in the memory folder is refused") from None
        if error.errno == errno.EISDIR:
            raise MemoryOperationError(f"{path.name} is a folder; view it to list what is in it") from None
        raise MemoryOperationError(f"{path.name}: cannot read ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise MemoryOperationError(f"{path.name} is a folder; view it to list what is in it")
        return handle.read().decode("utf-8", "replace")


def _write_file(target: Path, content: str) -> None:
    """Write atomically: a private temporary file beside it, then rename over it."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content.encode("utf-8"))
    os.replace(temporary, target)
