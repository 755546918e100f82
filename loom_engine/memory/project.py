"""Which project a workspace belongs to, for its long-term memory folder.

All worktrees of one repository share one memory: the key is the repository's common git
directory (``git rev-parse --git-common-dir``), found by reading ``.git`` ourselves rather
than running git (a hostile clone's config can make git run programs). A workspace that
is not in a repository is its own project.

The key must not be something a repository can choose. A ``.git`` *file* (a worktree's)
is the repository's content: one that names another project's git directory would load
that project's memory. So a worktree's git dir is believed only when git's own back-link
in it (``<common>/worktrees/<name>/gitdir``, written by ``git worktree add`` outside
the worktree) points back at this very ``.git`` file; otherwise the workspace counts as
a project of its own. The key is a hash of the real (symlink-free) path, so two paths
can only share a memory when they are the same folder.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

MAX_GIT_FILE_BYTES = 4096
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ProjectKey:
    """``anchor``: the folder that names the project (a common git dir, or the workspace);
    ``key``: the memory folder's name, ``<readable>-<hash of the anchor's real path>``."""

    anchor: Path
    key: str


def project_key(workspace_root: Path) -> ProjectKey:
    root = Path(os.path.realpath(workspace_root))
    anchor = _repository_anchor(root) or root
    readable = _UNSAFE.sub("-", (anchor.parent.name if anchor.name == ".git" else anchor.name))[:40].strip("-")
    digest = hashlib.sha256(os.fsencode(str(anchor))).hexdigest()[:16]
    return ProjectKey(anchor=anchor, key=f"{readable or 'project'}-{digest}")


def _repository_anchor(root: Path) -> Path | None:
    """The common git dir of the repository ``root`` is in (searched upwards), or None."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        try:
            if dot_git.is_symlink():
                return None  # a link could name anyone's repository: the workspace is its own project
            if dot_git.is_dir():
                return Path(os.path.realpath(dot_git))
            if dot_git.is_file():
                return _worktree_common_dir(dot_git)
        except OSError:
            return None
    return None


def _worktree_common_dir(dot_git: Path) -> Path | None:
    """The common dir of the worktree whose ``.git`` file is ``dot_git``, when git's
    back-link confirms it; None otherwise."""
    try:
        text = _read_small(dot_git)
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    named = Path(text[len("gitdir:"):].strip())
    git_dir = Path(os.path.realpath(named if named.is_absolute() else dot_git.parent / named))
    if git_dir.parent.name != "worktrees":
        return None
    try:
        back = Path(_read_small(git_dir / "gitdir").strip())
    except OSError:
        return None
    if os.path.realpath(back) != os.path.realpath(dot_git):
        return None
    return git_dir.parent.parent


def _read_small(path: Path) -> str:
    with open(path, "rb") as handle:
        return handle.read(MAX_GIT_FILE_BYTES).decode("utf-8", "replace")
