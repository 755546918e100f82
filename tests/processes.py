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
