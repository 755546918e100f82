"""apply_patch's last step: the planned files reach the disk together or not at all.

Each original is kept beside its file until every write has succeeded, so a failure
half-way through puts everything back by renaming, and no file's content is held in
memory for the rollback. Nothing here follows a symlink (see ``_files.safe_io``).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from loom_engine.tools.base import ToolError

from ._files.safe_io import open_folder, open_regular
from ._files.text import atomic_write


class CommitFailed(Exception):
    """Writing failed; every file already changed was restored. The message says what failed."""


def commit_files(final: Mapping[Path, tuple[bytes, int | None] | None]) -> None:
    """Write each path's new bytes (and mode), or delete it for None; on an error, put back
    everything already changed and raise CommitFailed.

    Each original is kept beside the file until the end, as a hard link (for a file
    being replaced) or under a hidden name (for one being deleted), so a rollback
    renames it back and no file's content is ever held in memory for it.
    """
    undo: list[tuple[Path, str | None]] = []  # a changed path, and where its original is kept
    created_dirs: list[Path] = []
    writes = [(path, state) for path, state in final.items() if state is not None]
    deletes = [path for path, state in final.items() if state is None]
    try:
        for path, (data, mode) in writes:
            if _holds(path, data):
                continue
            created_dirs.extend(_missing_dirs(path.parent))
            undo.append((path, _keep_original(path, move=False)))
            atomic_write(path, data, mode)
        for path in deletes:
            if not os.path.lexists(path):
                continue
            undo.append((path, _keep_original(path, move=True)))
    except (OSError, ToolError) as error:
        _roll_back(undo, created_dirs)
        reason = f"{error.strerror or error}" if isinstance(error, OSError) else str(error)
        where = error.filename if isinstance(error, OSError) and error.filename else "a file"
        raise CommitFailed(f"Could not write {where}: {reason}. Every file already changed was "
                           "restored.") from None
    for path, kept in undo:
        if kept is not None:
            _drop(path, kept)


def _holds(path: Path, data: bytes) -> bool:
    """True when ``path`` is a regular file whose content already is ``data``."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        fd, _ = open_regular(path, str(path))
    except (OSError, ToolError):
        return False
    with os.fdopen(fd, "rb") as handle:
        return handle.read(len(data) + 1) == data


def _keep_original(path: Path, *, move: bool) -> str | None:
    """Keep the entry at ``path`` under a hidden name beside it; None when there is none.

    ``move`` renames it away (that is the deletion); otherwise a hard link keeps the
    original while the new file is renamed over the name.
    """
    kept = f".{path.name[:80]}.{secrets.token_hex(4)}.loom-orig"
    if not os.path.lexists(path.parent):
        return None  # a folder the patch is about to create
    with open_folder(path.parent, str(path), "change") as folder:
        try:
            os.stat(path.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if move:
            os.rename(path.name, kept, src_dir_fd=folder, dst_dir_fd=folder)
        else:
            os.link(path.name, kept, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    return kept


def _drop(path: Path, kept: str) -> None:
    try:
        with open_folder(path.parent, str(path), "change") as folder:
            os.unlink(kept, dir_fd=folder)
    except (OSError, ToolError):
        pass

def _missing_dirs(folder: Path) -> list[Path]:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    return missing


def _roll_back(undo: list[tuple[Path, str | None]], created_dirs: list[Path]) -> None:
    for path, kept in reversed(undo):
        try:
            with open_folder(path.parent, str(path), "restore") as folder_fd:
                if kept is None:
                    os.unlink(path.name, dir_fd=folder_fd)
                else:
                    os.rename(kept, path.name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except (OSError, ToolError):
            pass
    for folder in sorted(set(created_dirs), key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass
