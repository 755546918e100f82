"""Empty folders that stand in for protected paths not there yet, while commands run.

A read-only mount needs something to sit on, so Loom creates the first missing
component of a protected path (``.loom`` in a workspace without one) as an empty
folder before a confined command starts, and removes it when the last command that
uses it has ended. Counted per sandbox: a folder is removed only when no command of
this Loom still has it mounted (removing a mount point on the host takes the mount
away inside too, which would open the path to a command still running). Another Loom
in the same workspace is not counted; the most a race between two can do is leave an
empty folder behind, or take a placeholder away from the other's running command.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path


class Placeholders:
    def __init__(self) -> None:
        self._users: dict[Path, int] = {}
        self._lock = threading.Lock()

    def acquire(self, paths: Iterable[Path]) -> tuple[Path, ...]:
        """Create (or share) a placeholder at each path; those this call holds."""
        held: list[Path] = []
        with self._lock:
            for path in paths:
                if path in self._users:
                    self._users[path] += 1
                    held.append(path)
                    continue
                try:
                    os.mkdir(path, 0o755)
                except FileExistsError:
                    continue  # made meanwhile by someone else: an existing path, not ours
                self._users[path] = 1
                held.append(path)
        return tuple(held)

    def release(self, paths: Iterable[Path]) -> None:
        with self._lock:
            for path in paths:
                count = self._users.get(path, 0) - 1
                if count > 0:
                    self._users[path] = count
                    continue
                self._users.pop(path, None)
                with contextlib.suppress(OSError):  # not empty: someone outside wrote there
                    os.rmdir(path)

    def release_all(self) -> None:
        with self._lock:
            paths = list(self._users)
            self._users.clear()
        for path in paths:
            with contextlib.suppress(OSError):
                os.rmdir(path)
