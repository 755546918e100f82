"""Writing restored files: only inside the workspace, atomically, with their mode; and
the diffs a preview shows."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

MAX_DIFF_LINES = 2000
_BINARY_SNIFF = 8000


def inside(workspace: Path, path: str) -> Path:
    """``workspace/path``, refused when a folder on the way leads out of the workspace (a link)."""
    full = workspace / path
    parent = os.path.realpath(full.parent)
    if parent != str(workspace) and not parent.startswith(str(workspace) + os.sep):
        raise ValueError("a folder on its path is a link leading out of the workspace")
    return full


def delete_path(workspace: Path, path: str) -> None:
    full = inside(workspace, path)
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise ValueError("it is a folder now")
    os.unlink(full)


def write_entry(workspace: Path, path: str, mode: str, content: bytes) -> None:
    """Write ``path`` with ``content`` and git ``mode`` (``100644``, ``100755``, ``120000``: a link;
    ``""``: keep the file's permissions)."""
    full = workspace / path
    _make_folders(workspace, full.parent)
    full = inside(workspace, path)
    try:
        existing = os.lstat(full)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise ValueError("a folder stands where the file was")
    if mode == "120000":
        if existing is not None:
            os.unlink(full)
        os.symlink(os.fsdecode(content), full)
        return
    if existing is not None and stat.S_ISREG(existing.st_mode):
        bits = stat.S_IMODE(existing.st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        bits = 0o666 & ~umask
    if mode == "100755":
        bits |= (bits & 0o444) >> 2
    elif mode == "100644":
        bits &= ~0o111
    # Any other mode (""): the bits the file has now are kept.
    tmp = full.with_name(f".{full.name}.loom-restore")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, bits)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, bits)
        os.replace(tmp, full)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _make_folders(workspace: Path, folder: Path) -> None:
    if folder == workspace or folder.is_dir():
        inside(workspace, str(folder.relative_to(workspace) / "x"))
        return
    _make_folders(workspace, folder.parent)
    os.mkdir(folder)


def is_binary(content: bytes) -> bool:
    return b"\0" in content[:_BINARY_SNIFF]


def unified_diff(path: str, before: bytes, after: bytes) -> str:
    old = before.decode("utf-8", "replace").splitlines(keepends=True)
    new = after.decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
