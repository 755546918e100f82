"""Where bash would find a command word's program on PATH, remembered for one check.

A long command line names the same few programs over and over (168 simple commands,
six distinct words); each lookup resolves every PATH entry with its symlinks followed,
so doing it once per word and folder is most of the saving. A lookup lives as long as
the check that made it (nothing runs between the first simple command's check and the
last one's), and the key holds PATH as it is read at each lookup, so a changed PATH is
a new lookup, never a stale answer.
"""

from __future__ import annotations

import os
from pathlib import Path

from .expansion import FolderWalks, Unknowable, remembered

__all__ = ["ProgramLookups", "find_program"]


def find_program(name: str, cwd: Path) -> Path | None:
    """The file bash would run for the command word ``name`` in ``cwd`` (resolved), or
    None when there is none. Raises Unknowable for a lookup through /proc."""
    return ProgramLookups().find(name, cwd)


class ProgramLookups:
    """:func:`find_program` for one check: each (word, folder, PATH) is looked up once,
    and an Unknowable answer is raised again each time it is asked. ``walks`` (the
    check's) follows each PATH folder's own symlinks once for every name."""

    def __init__(self, walks: FolderWalks | None = None) -> None:
        self._found: dict[tuple[str, str, str], Path | Unknowable | None] = {}
        self._walks = walks or FolderWalks()

    def find(self, name: str, cwd: Path) -> Path | None:
        search_path = os.environ.get("PATH", os.defpath)
        return remembered(self._found, (name, str(cwd), search_path),
                          lambda: self._find(name, cwd, search_path))

    def _find(self, name: str, cwd: Path, search_path: str) -> Path | None:
        if "/" in name:
            full = self._walks.physical(name, cwd)
            return full if _runnable(full) else None
        for entry in search_path.split(os.pathsep):
            candidate = os.path.join(entry or ".", name)
            folder = os.path.join(cwd, entry or ".")  # as physical() takes it from cwd
            if _runnable(full := self._walks.physical_in(folder, name, candidate, cwd)):
                return full
        return None


def _runnable(full: Path) -> bool:
    return full.is_file() and os.access(full, os.X_OK)
