"""Loom's own files are the user's alone: folders 0700, files 0600.

Sessions hold every file the model read, the trust records say what may run, OAuth
tokens are secrets: nobody else on the machine may read them. So every folder Loom makes
for its own files is 0700 and every file 0600 whatever the umask (created with those
bits, then set exactly, since a umask can only take bits away); :func:`secure_folders`
closes the folders again at each start and, once per folder, takes the group's and
others' bits off everything an older Loom left readable in them.

Only those bits are taken away: the owner's stay as they were, so a script the user
keeps in the config folder stays executable (0755 becomes 0700).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Literal

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_OTHERS = 0o077
# In the data folder: the folders whose existing contents were made private already.
_SECURED_RECORD = ".private-folders.json"


def private_folder(path: Path) -> Path:
    """``path`` as a folder, it and every folder created on the way there 0700."""
    missing: list[Path] = []
    current = Path(path)
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made by another process meanwhile: its bits are fixed below
        os.chmod(folder, FOLDER_MODE)
    _restrict(path)
    return path


def open_private(path: Path, mode: Literal["a", "w"] = "a") -> IO[str]:
    """``path`` opened for text (UTF-8), created 0600; an existing file is made 0600 too."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, content: str | bytes) -> None:
    """Replace ``path`` with ``content`` at once (a temporary file renamed over it), 0600."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)  # mkstemp's 0600 less a strange umask's bits
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def secure_folders(data_folder: Path, folders: Iterable[Path]) -> list[str]:
    """Make each of ``folders`` that exists 0700; the first time a folder is seen (the
    record is kept in ``data_folder``), also take the group's and others' bits off
    everything in it. Returns what could not be changed, one line each."""
    problems: list[str] = []
    record = data_folder / _SECURED_RECORD
    done = _read_record(record)
    newly: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        real = Path(os.path.realpath(folder))  # a config folder kept in a dotfiles repository
        try:
            _restrict(real)
        except OSError as error:
            problems.append(f"cannot make {folder} private: {error.strerror or error}")
            continue
        key = str(real)
        if key in done:
            continue
        failed = restrict_tree(real)
        problems += [f"cannot make {path} private: {why}" for path, why in failed[:3]]
        if not failed:
            newly.append(key)
    if newly and data_folder.is_dir():
        try:
            write_private(record, json.dumps(sorted(done | set(newly)), indent=1) + "\n")
        except OSError as error:
            problems.append(f"cannot write {record}: {error.strerror or error}")
    return problems


def restrict_tree(root: Path) -> list[tuple[Path, str]]:
    """Take the group's and others' bits off every file and folder under ``root``
    (symlinks are left alone, never followed); what failed, with why."""
    failed: list[tuple[Path, str]] = []

    def walk_error(error: OSError) -> None:
        failed.append((Path(error.filename or root), error.strerror or str(error)))

    for folder, folders, files in os.walk(root, onerror=walk_error):
        for name in (*folders, *files):
            path = Path(folder) / name
            try:
                _restrict(path)
            except OSError as error:
                failed.append((path, error.strerror or str(error)))
    return failed


def _restrict(path: Path) -> None:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not info.st_mode & _OTHERS:
        return
    os.chmod(path, stat.S_IMODE(info.st_mode) & ~_OTHERS)


def _read_record(record: Path) -> set[str]:
    try:
        value = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {item for item in value if isinstance(item, str)} if isinstance(value, list) else set()
