"""Finding every process a bash command started, including those that left its group.

Killing the command's process group misses what escaped it: ``setsid sleep 300 &``
starts a new session, and a daemon that double-forks leaves no parent to follow. So
each command runs with a marker in its environment, ``LOOM_BASH_CALL=<loom pid>-<token>``,
which every process it starts inherits, and what is left is found by reading
``/proc/<pid>/environ`` (only processes of the same user are readable). Loom also makes
itself a child subreaper on Linux: orphans of its commands are re-parented to Loom
instead of PID 1, so the zombies of the ones killed here are reaped by Loom rather than
left to an init that may never reap them (many containers).

A process that clears its environment *and* leaves the group (``env -i setsid …``) is
not found; nor is one handed to another daemon (``systemd-run``, ``at``). Killing Loom
with SIGKILL runs none of this. This limits accidents; it is not a sandbox.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import secrets
import signal
import sys

MARKER_VARIABLE = "LOOM_BASH_CALL"
_PR_SET_CHILD_SUBREAPER = 36


def new_marker() -> str:
    """This call's marker; the Loom pid in front lets the exit clean-up find all of its own."""
    return f"{os.getpid()}-{secrets.token_hex(8)}"


def own_marker_prefix() -> str:
    return f"{os.getpid()}-"


@functools.cache
def become_subreaper() -> bool:
    """Make this process adopt its descendants' orphans (Linux); once per process."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _stat(pid: str) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    if len(fields) < 3:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2])


def _carries(pid: str, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in b"\0" + fh.read()
    except OSError:  # gone, or another user's process
        return False


def find_processes(pgid: int | None, marker: str) -> list[int]:
    """Live (not zombie) processes in group ``pgid`` or whose marker starts with ``marker``.

    Without /proc only the group can be checked, with ``killpg(pgid, 0)``.
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        if pgid is None:
            return []
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    needle = f"\0{MARKER_VARIABLE}={marker}".encode()
    me = os.getpid()
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        stat = _stat(name)
        if stat is None or stat[0] == "Z":
            continue
        if stat[2] == pgid or _carries(name, needle):
            found.append(int(name))
    return found


def is_alive(pid: int) -> bool:
    stat = _stat(str(pid))
    if stat is not None:
        return stat[0] != "Z"
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return not os.path.isdir("/proc")  # /proc says it is gone


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def reap_adopted(pids: list[int], keep: int | None = None) -> None:
    """Collect the exit status of killed orphans re-parented to Loom (never ``keep``:
    asyncio waits for that one itself)."""
    me = os.getpid()
    for pid in pids:
        if pid == keep:
            continue
        stat = _stat(str(pid))
        if stat is not None and stat[1] == me:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def kill_own_leftovers() -> None:
    """At exit: SIGKILL every process any command of this Loom left running."""
    pids = find_processes(None, own_marker_prefix())
    signal_all(pids, signal.SIGKILL)
    reap_adopted(pids)
