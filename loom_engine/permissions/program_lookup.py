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

from .expansion import Unknowable, physical

__all__ = ["ProgramLookups", "find_program"]


def find_program(name: str, cwd: Path) -> Path | None:
    """The file bash would run for the command word ``name`` in ``cwd`` (resolved), or
    None when there is none. Raises Unknowable for a lookup through /proc."""
    return _find(name, cwd, os.environ.get("PATH", os.defpath))


def _find(name: str, cwd: Path, search_path: str) -> Path | None:
    candidates = [name] if "/" in name else [os.path.join(entry or ".", name)
                                              for entry in search_path.split(os.pathsep)]
    for candidate in candidates:
        full = physical(candidate, cwd)
        if full.is_file() and os.access(full, os.X_OK):
            return full
    return None


class ProgramLookups:
    """:func:`find_program` for one check: each (word, folder, PATH) is looked up once,
    and an Unknowable answer is raised again each time it is asked."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str, str], Path | Unknowable | None] = {}

    def find(self, name: str, cwd: Path) -> Path | None:
        search_path = os.environ.get("PATH", os.defpath)
        key = (name, str(cwd), search_path)
        if key not in self._found:
            try:
                self._found[key] = _find(name, cwd, search_path)
            except Unknowable as exc:
                self._found[key] = exc
        answer = self._found[key]
        if isinstance(answer, Unknowable):
            raise Unknowable(str(answer))
        return answer
