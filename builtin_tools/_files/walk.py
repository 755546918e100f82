"""Which files a search sees: the gitignore-aware walk shared by glob, grep, ls and the
TUI's @-completion.

glob, grep and ls must agree on the file set whether or not the `rg` binary is
available, so the Python walker here follows ripgrep's rules as Loom invokes it
(see :data:`.rg.RG_WALK_ARGS`):

* ``.gitignore`` files apply only inside a git repository (a folder with a ``.git``
  entry, at or above the file), from the repository root down; the nearest file's
  last matching line decides; a nested repository starts afresh.
* ``.git`` itself is never listed; other hidden files are.
* Symbolic links are not followed (and not listed by the search tools).
* A folder given explicitly is walked even when it is itself ignored; rules from
  ignore files above it are applied the way rg 14.1.0 does (see :class:`.ignore.Level`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .ignore import Level, ancestor_levels, read_ignore_file


@dataclass(frozen=True)
class WalkEntry:
    rel: str  # relative to the walk root, '/'-separated
    is_dir: bool
    is_symlink: bool = False


def walk(
    root: Path | str,
    *,
    include_dirs: bool = False,
    include_symlinks: bool = False,
    prune: Callable[[str, bool], bool] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[WalkEntry]:
    """Entries below ``root`` (not ``root`` itself) that the ignore rules keep.

    Ignored folders are never entered. ``prune(rel, is_dir)`` drops more entries.
    Order is unspecified; callers sort.
    """
    root_str = os.fspath(root)
    levels, git_active = ancestor_levels(root_str)
    stack: list[tuple[str, str, tuple[Level, ...], bool]] = [(root_str, "", levels, git_active)]
    while stack:
        if cancelled is not None and cancelled():
            return
        folder, folder_rel, levels, git_active = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        if ".git" in names and os.path.exists(os.path.join(folder, ".git")):
            levels, git_active = (), True  # a (nested) repository starts its own rules
        if git_active and ".gitignore" in names:
            rules = read_ignore_file(os.path.join(folder, ".gitignore"))
            if rules is not None:
                strip = len(folder_rel) + 1 if folder_rel else 0
                levels = (Level(rules, strip, ""), *levels)
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            rel = f"{folder_rel}/{name}" if folder_rel else name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                if not (is_link or is_dir or entry.is_file(follow_symlinks=False)):
                    continue  # sockets, fifos, devices
            except OSError:
                continue
            if is_link and not include_symlinks:
                continue
            ignored = None
            for level in levels:
                ignored = level.match(rel, is_dir)
                if ignored is not None:
                    break
            if ignored:
                continue
            if prune is not None and prune(rel, is_dir):
                continue
            if is_dir:
                if include_dirs:
                    yield WalkEntry(rel, True)
                stack.append((entry.path, rel, levels, git_active))
            else:
                yield WalkEntry(rel, False, is_link)


def walk_files(root: Path | str, cancelled: Callable[[], bool] | None = None) -> list[str]:
    """Every searchable file below ``root``, relative to it, sorted."""
    return sorted(e.rel for e in walk(root, cancelled=cancelled))
