"""The workspace root and the one way every file path is resolved against it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def find_workspace_root(start: Path) -> Path:
    """The git root above ``start``, or ``start`` itself outside git."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


@dataclass(frozen=True)
class Workspace:
    root: Path
    # Folders outside the root the user allowed with --add-dir.
    extra_dirs: tuple[Path, ...] = field(default_factory=tuple)

    @classmethod
    def at(cls, path: Path | str, extra_dirs: tuple[Path, ...] = ()) -> Workspace:
        return cls(Path(os.path.realpath(path)), tuple(Path(os.path.realpath(d)) for d in extra_dirs))

    def resolve(self, path: str | os.PathLike[str], cwd: Path | None = None) -> Path:
        """Absolute, symlink-free path; relative paths are taken from ``cwd`` or the root.

        ``~`` is expanded so that a path the model writes the way a shell would is
        checked the way a shell would use it.
        """
        raw = os.path.expanduser(os.fspath(path))
        base = cwd or self.root
        joined = raw if os.path.isabs(raw) else os.path.join(base, raw)
        return Path(os.path.realpath(joined))

    def contains(self, resolved: Path) -> bool:
        """True when an already resolved path lies in the root or an added dir."""
        return any(_is_within(resolved, d) for d in (self.root, *self.extra_dirs))

    def relative(self, resolved: Path) -> str:
        """Path relative to the root when inside it, else the absolute path."""
        if _is_within(resolved, self.root):
            rel = resolved.relative_to(self.root).as_posix()
            return rel or "."
        return str(resolved)


def _is_within(path: Path, folder: Path) -> bool:
    # On the strings: a search asks this of every file it finds, and pathlib's parents
    # cost tens of microseconds a path. Both are absolute and normalised (resolved).
    inner, outer = str(path), str(folder)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")
