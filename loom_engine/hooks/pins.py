"""What a project hook was trusted with: the content of the folders its code lives in.

Trusting a hook covers folders, not only the files its command names: a ``guard.sh``
sources ``lib.sh``, imports a module, runs a Makefile beside it, loops over a glob. Each
covered folder is pinned by one digest of everything in it — names, kinds, executable
bits, link targets, contents — at any depth (``whole``), or of the entries directly in
it (the workspace's own top folder, which cannot be pinned whole). Whoever trusts a hook
(the CLI) records the pins with it; the runner reads them again before each run, so a
change during the session (the model's edit, a pull in another terminal) keeps the hook
from running until the user is asked again.

A folder that cannot be read whole each time — more than :data:`MAX_FILES` entries or
:data:`MAX_BYTES` of files, or something in it unreadable — cannot be pinned, and a hook
that needs it cannot be trusted (fail closed). Nothing is ever opened that could block:
a FIFO or device is recorded by its kind, not read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 256
MAX_BYTES = 4 * 1024 * 1024
# The digest of a covered folder that does not exist (yet): it appearing is a change too.
ABSENT = "absent"


@dataclass(frozen=True)
class Pin:
    """One covered folder (absolute path) and its digest when the user trusted the hook."""

    path: str
    whole: bool  # every entry at any depth; False: the entries directly in it
    digest: str


@dataclass(frozen=True)
class FolderState:
    """A folder's digest now, or why it cannot be pinned."""

    digest: str | None
    unreadable: str | None = None  # the entry that could not be read (relative to the folder)
    too_big: bool = False


def folder_state(path: Path, *, whole: bool) -> FolderState:
    """The digest of ``path`` as it is now (:data:`ABSENT` when nothing is there)."""
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return FolderState(ABSENT)
    except OSError:
        return FolderState(None, unreadable=".")
    if not stat.S_ISDIR(top.st_mode):  # a link or a file where the folder was
        try:
            target = os.readlink(path) if stat.S_ISLNK(top.st_mode) else ""
        except OSError:
            return FolderState(None, unreadable=".")
        return FolderState(_hash([["not a folder", stat.S_IFMT(top.st_mode), target]]))
    return _walk(path, whole, (top.st_dev, top.st_ino))


def _walk(root: Path, whole: bool, first: tuple[int, int]) -> FolderState:
    records: list[list[object]] = []
    entries = size = 0
    seen = {first}  # folders entered, by device and inode: a link back up is not a loop
    pending: list[tuple[str, str]] = [("", str(root))]
    while pending:
        relative_folder, folder = pending.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return FolderState(None, unreadable=relative_folder or ".")
        for name in names:
            entries += 1
            if entries > MAX_FILES:
                return FolderState(None, too_big=True)
            relative = f"{relative_folder}/{name}" if relative_folder else name
            full = os.path.join(folder, name)
            try:
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    records.append([relative, "link", os.readlink(full)])
                    info = os.stat(full)  # what it leads to is what runs
            except FileNotFoundError:
                records.append([relative, "gone"])  # dangling link, or removed meanwhile
                continue
            except OSError:
                return FolderState(None, unreadable=relative)
            if stat.S_ISDIR(info.st_mode):
                records.append([relative, "folder"])
                if whole and (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    pending.append((relative, full))
            elif stat.S_ISREG(info.st_mode):
                size += info.st_size
                if size > MAX_BYTES:
                    return FolderState(None, too_big=True)
                digest = _file_digest(full)
                if digest is None:
                    return FolderState(None, unreadable=relative)
                records.append([relative, "file", bool(info.st_mode & 0o111), digest])
            else:  # a FIFO, a socket, a device: never opened (it could block)
                records.append([relative, "special", stat.S_IFMT(info.st_mode)])
    return FolderState(_hash(records))


def _file_digest(path: str) -> str | None:
    try:
        with open(path, "rb", opener=_open_nonblocking) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the lstat
                return "special"
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def _hash(records: list[list[object]]) -> str:
    return hashlib.sha256(json.dumps(records, separators=(",", ":")).encode("utf-8", "surrogateescape")).hexdigest()


def changed_pin(pins: Iterable[Pin]) -> str | None:
    """The first pinned folder that is no longer as it was trusted (changed, gone, grown
    too big, unreadable), or None."""
    for pin in pins:
        if folder_state(Path(pin.path), whole=pin.whole).digest != pin.digest:
            return pin.path
    return None
