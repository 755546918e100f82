"""Opening, writing and deleting files without following a symlink anywhere on the way.

The file tools resolve a path (every symlink followed) when the permission check runs,
and act on it later. A folder of that path swapped for a symlink in between would
redirect a plain ``open`` somewhere that was never checked. So every folder is opened
from ``/`` one component at a time with ``O_NOFOLLOW``, and the file is created, opened,
renamed or removed relative to the folder's descriptor: whatever changes on disk, the
tools touch only the place that was checked, or nothing.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from loom_engine.tools.base import ToolError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a folder one may pass through but not list (mode 0711), which
# is all the *at calls below need; elsewhere folders are opened for reading.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO to read must not hang; it is refused after fstat anyway.
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class PathChangedError(ToolError):
    """A component of a checked path became a symlink before the tool could use it."""


def _changed(place: str, shown: str, action: str) -> PathChangedError:
    return PathChangedError(
        f"Did not {action} {shown}: {place} is now a symlink (it changed after the path was checked), "
        "so nothing was done. Check the path and call again.")


def _is_link(name: str, folder_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextmanager
def open_folder(folder: Path, shown: str, action: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``folder`` (absolute, symlink-free), reached without following links.

    With ``create`` missing folders are made on the way. A component that is a symlink
    raises PathChangedError; a missing one FileNotFoundError.
    """
    if not folder.is_absolute():
        raise ValueError(f"not an absolute path: {folder}")
    fd = os.open("/", _DIR_FLAGS)
    try:
        walked = Path("/")
        for name in folder.parts[1:]:
            walked = walked / name
            try:
                below = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                below = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(name, fd):
                    raise _changed(f"the folder {walked}", shown, action) from None
                raise
            os.close(fd)
            fd = below
        yield fd
    finally:
        os.close(fd)


def open_regular(path: Path, shown: str) -> tuple[int, os.stat_result]:
    """A read descriptor of ``path`` and its stat; the caller closes it.

    Raises PathChangedError when the path now goes through a symlink, OSError as the
    system reports it otherwise (FileNotFoundError, IsADirectoryError...).
    """
    with open_folder(path.parent, shown, "read") as folder_fd:
        try:
            fd = os.open(path.name, _READ_FLAGS, dir_fd=folder_fd)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EMLINK) and _is_link(path.name, folder_fd):
                raise _changed(str(path), shown, "read") from None
            raise
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def write_file_at(path: Path, data: bytes, mode: int | None, shown: str) -> None:
    """Replace ``path`` with ``data`` in one rename, inside the folder that was checked.

    ``mode`` keeps an existing file's permission bits; a new file gets 0666 minus the
    umask. Missing folders are created. The final name being a symlink now means the
    path changed since it was resolved: refused rather than replaced.
    """
    with open_folder(path.parent, shown, "write", create=True) as folder_fd:
        if _is_link(path.name, folder_fd):
            raise _changed(str(path), shown, "write")
        temp = f".{path.name[:80]}.{os.getpid()}-{secrets.token_hex(4)}.loom-tmp"  # pid: see stale_files
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                     0o666 if mode is None else 0o600, dir_fd=folder_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.rename(temp, path.name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=folder_fd)
            except OSError:
                pass
            raise


def unlink_at(path: Path, shown: str) -> None:
    """Remove the entry ``path`` (a symlink itself, never what it points to)."""
    with open_folder(path.parent, shown, "delete") as folder_fd:
        os.unlink(path.name, dir_fd=folder_fd)


def rename_at(path: Path, new_name: str, shown: str) -> None:
    """Rename the entry ``path`` to ``new_name`` in the same folder, following no link."""
    with open_folder(path.parent, shown, "move") as folder_fd:
        os.rename(path.name, new_name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


@contextmanager
def pinned_folder(folder: Path, shown: str) -> Iterator[tuple[str, tuple[int, ...]]]:
    """A working directory for a child process that is exactly the checked ``folder``.

    On Linux the folder is opened without following links and the child starts in
    ``/proc/self/fd/N`` (its own copy of that descriptor, passed to it), so swapping a
    folder of the path for a symlink cannot move the search elsewhere. Elsewhere the
    path is checked the same way and given as it is. Yields the directory and the
    descriptors to pass.
    """
    stack = ExitStack()
    try:
        fd = stack.enter_context(open_folder(folder, shown, "search"))
    except OSError as error:
        # Not an rg failure: the folder went away or cannot be entered.
        raise ToolError(f"Cannot search {shown}: {error.strerror or error}.") from None
    with stack:
        magic = f"/proc/self/fd/{fd}"
        if os.path.isdir(magic):
            yield magic, (fd,)
        else:
            yield str(folder), ()
