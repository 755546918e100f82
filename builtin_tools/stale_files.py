"""Deleting the temp files a killed Loom left behind, when the next one starts.

A Loom ended with SIGKILL runs no clean-up: bash's working-directory file stays in
TMPDIR (``loom-cwd-<pid>-…``) and a write cut short leaves its temp file beside the
target (``.<name>.<pid>-<hex>.loom-tmp``). Both names carry the pid of the Loom that
made them, so a file is deleted only when all of these hold: its name has exactly that
shape, it is a regular file of this user, it is over a minute old, and the process
with that pid is gone. Anything else — other names, other users' files, files of a
live Loom — is never touched. (A reused pid keeps a stale file: the safe mistake.)
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

MIN_AGE_S = 60.0
CWD_FILE = re.compile(r"loom-cwd-(\d+)-[A-Za-z0-9_]+")
WRITE_TEMP = re.compile(r"\..+\.(\d+)-[0-9a-f]{8}\.loom-tmp", re.DOTALL)
# Folders no Loom tool writes into, and that can be huge.
_SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                              ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox"})
# A workspace larger than this is only partly swept; the rest waits for another start.
_MAX_FOLDERS = 20_000


def _owner_gone(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False  # alive under another user, or not a pid we can ask about
    return False


def _is_stale(path: str, pid: int, now: float) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
            and now - st.st_mtime > MIN_AGE_S and _owner_gone(pid))


def _candidates(tmpdir: Path, workspace: Path) -> Iterator[tuple[str, int]]:
    with contextlib.suppress(OSError), os.scandir(tmpdir) as entries:
        for entry in entries:
            m = CWD_FILE.fullmatch(entry.name)
            if m:
                yield entry.path, int(m.group(1))
    seen = 0
    for folder, subfolders, files in os.walk(workspace):  # symlinks are not followed
        subfolders[:] = [name for name in subfolders if name not in _SKIPPED_FOLDERS]
        seen += 1
        if seen > _MAX_FOLDERS:
            return
        for name in files:
            if name.endswith(".loom-tmp"):
                m = WRITE_TEMP.fullmatch(name)
                if m:
                    yield os.path.join(folder, name), int(m.group(1))


def remove_stale_files(workspace: Path, tmpdir: Path | None = None, now: float | None = None) -> list[str]:
    """Delete the stale files; the paths deleted."""
    now = time.time() if now is None else now
    removed = []
    for path, pid in _candidates(tmpdir or Path(tempfile.gettempdir()), workspace):
        if _is_stale(path, pid, now):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
    return removed


def remove_stale_files_in_background(workspace: Path) -> threading.Thread:
    """The sweep off the start-up path: walking a big workspace takes a while."""
    thread = threading.Thread(target=remove_stale_files, args=(workspace,), name="loom-stale-files",
                              daemon=True)
    thread.start()
    return thread
