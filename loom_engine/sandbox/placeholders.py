"""Empty folders that stand in for protected paths not there yet, for the session.

A read-only mount needs something to sit on, so Loom creates the first missing
component of a protected path (``.loom`` in a workspace without one) as an empty
folder the first time a confined command needs it, and removes it when the sandbox
is closed, if it is still empty. Kept for the whole session rather than per command:
removing a mount point on the host takes the mount away inside any command still
running (a parallel sub-agent's), which would open the path to it; and each removal
costs a few milliseconds on every command. So while a session runs, an empty ``.loom``
or ``.claude`` folder may show in a workspace that had none; one that something else
filled meanwhile (Loom saving an "always allow" rule) is left in place. A Loom killed
outright leaves its empty placeholders behind (harmless: an empty ``.git`` folder is
ignored by git).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path


class Placeholders:
    def __init__(self) -> None:
        self._made: list[Path] = []
        self._lock = threading.Lock()

    def make(self, paths: Iterable[Path]) -> None:
        """Create each missing path as an empty folder (one already there is left alone)."""
        with self._lock:
            for path in paths:
                try:
                    os.mkdir(path, 0o755)
                except FileExistsError:
                    continue  # made meanwhile by someone else: an existing path, not ours
                self._made.append(path)

    def remove_all(self) -> None:
        """Remove the placeholders still empty, the deepest first."""
        with self._lock:
            made, self._made = self._made, []
        for path in sorted(made, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):  # not empty: someone wrote there, so it stays
                os.rmdir(path)
