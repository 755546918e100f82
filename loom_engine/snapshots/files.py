"""Writing restored files: only inside the workspace, atomically, with their mode; and
the diffs a preview shows."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

MAX_DIFF_LINES = 2000
_BINARY_SNIFF = 8000


def link_on_path(workspace: Path, path: str) -> str | None:
    """The first folder on the way to ``path`` (relative to the real ``workspace``) that is
    not a real folder now — a link, wherever it points, or a file — or None. A snapshot
    never holds a path behind a link (git refuses one), so such a path's folder was real
    when it was kept and has been replaced since: reading or writing through it would
    reach whatever the link names."""
    parts = Path(path).parts[:-1]
    for depth in range(1, len(parts) + 1):
        folder = os.path.join(workspace, *parts[:depth])
        try:
            info = os.lstat(folder)
        except (FileNotFoundError, NotADirectoryError):
            return None  # missing: a restore makes it a real folder
        if not stat.S_ISDIR(info.st_mode):
            return "/".join(parts[:depth])
    return None


def link_reason(link: str) -> str:
    """Why a path behind ``link`` (see :func:`link_on_path`) is left alone, in words."""
    return f"{link} is no longer a folder (a link or a file stands there); nothing is written through it"


def inside(workspace: Path, path: str) -> Path:
    """``workspace/path``, refused when a folder on the way is a link now (see :func:`link_on_path`)."""
    link = link_on_path(workspace, path)
    if link is not None:
        raise ValueError(link_reason(link))
    return workspace / path


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
