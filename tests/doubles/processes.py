"""Checking on processes the tests started (reads /proc, so Linux only)."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Running or stopped; a zombie (dead, not yet reaped by its new parent) is dead."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def children_of(parents: set[int]) -> list[int]:
    """The live processes whose parent is one of ``parents``."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if int(fields.get("PPid", "0").strip()) in parents and not fields.get("State", "").startswith("Z"):
            found.append(int(status.parent.name))
    return found


def running_with(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``: give the processes a test
    starts a marker of its own (``sleep 30.123456``), so the check never sees another
    test's, or another program's, processes."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def marked_sleep(seconds: int = 600) -> str:
    """A ``sleep`` command line no other process has (``sleep 600.<pid><ns>``), for
    :func:`running_with`: long enough that a test bounded well under it can only pass if
    the sleep was killed, never because it was waited out."""
    import os
    import time

    return f"sleep {seconds}.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"
