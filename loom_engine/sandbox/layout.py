"""What a confined command may see and change, worked out once for both backends.

Everything is read-only but the writable roots: the workspace, its ``--add-dir``
folders, the user's ``allow_write`` folders and a private temp folder. Inside the
writable roots some places stay read-only, because what is written there runs later
outside the sandbox or widens Loom itself:

* ``.git/hooks`` and ``.git/config`` (git runs what they name: a hook on the user's
  next commit, ``core.fsmonitor`` on their next ``git status``), and the same two in
  the folder a ``.git`` *file* points to (a worktree), and that ``.git`` file;
* ``.loom/`` and ``.claude/`` (project settings, hooks, commands, agents, skills);
* the folder ``core.hooksPath`` names (husky's ``.husky``), read when the sandbox opens;
* the ``protected`` paths Loom adds (the folders of trusted hook scripts, Loom's own
  config folder when it lies in the workspace).

A protected path that does not exist yet is protected too: a command must not be
able to create ``.git/hooks/x`` in a repository whose hooks folder is missing, nor
``.loom/settings.toml`` in a workspace that has no ``.loom`` (the next start would
read it as the project's own settings). Its first missing component becomes an empty
folder with an empty read-only mount on it (see :mod:`.placeholders`, which removes
it again when the session ends). A protected path
reached through a symlink is the other hard case: the link itself could be replaced
by a real folder. The folder holding the link is then *sealed*: its entries stay
writable one by one, but none can be added, removed or renamed.

``deny_read`` paths are hidden (an empty folder over a folder, /dev/null over a
file); one that contains a writable root cannot be hidden (that would hide the
workspace) and is named in :attr:`Layout.notes`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Inside every writable root (the workspace, each --add-dir folder).
PROTECTED_IN_ROOT: tuple[str, ...] = (".git/hooks", ".git/config", ".loom", ".claude")
# Inside the folder a `.git` file points to, and its common dir (worktrees share it).
PROTECTED_IN_GITDIR: tuple[str, ...] = ("hooks", "config")
_MAX_LINK_DEPTH = 8


@dataclass(frozen=True)
class Layout:
    # Writable, each an existing folder (resolved).
    writable: tuple[Path, ...]
    # Existing paths inside a writable root that stay read-only.
    read_only: tuple[Path, ...]
    # Protected paths not there yet, as their first missing component.
    missing: tuple[Path, ...]
    # Folders inside a writable root whose entries cannot be added or removed.
    sealed: tuple[Path, ...]
    # deny_read paths that exist, folders and the rest.
    hidden_dirs: tuple[Path, ...]
    hidden_files: tuple[Path, ...]
    # What could not be arranged, in words for the status line.
    notes: tuple[str, ...] = ()

    @property
    def guarded(self) -> tuple[Path, ...]:
        """Every place inside a writable root that a command may not change."""
        return (*self.read_only, *self.missing, *self.hidden_dirs, *self.hidden_files)


def plan_layout(writable: Iterable[Path], *, protected: Sequence[Path] = (),
                deny_read: Sequence[Path] = ()) -> Layout:
    """The layout for these writable folders (those missing are left out)."""
    roots = _unique(Path(os.path.realpath(p)) for p in writable if os.path.isdir(p))
    finder = _Finder(roots)
    for root in roots:
        for name in PROTECTED_IN_ROOT:
            finder.protect(root / name)
        finder.follow_git_file(root)
    for path in protected:
        finder.protect(Path(os.path.abspath(path)))
    hidden_dirs: list[Path] = []
    hidden_files: list[Path] = []
    notes: list[str] = []
    for raw in deny_read:
        path = Path(os.path.realpath(raw))
        if not os.path.lexists(path):
            continue
        if any(_within(root, path) for root in roots):
            notes.append(f"{raw} holds a writable folder, so it stays readable")
            continue
        (hidden_dirs if os.path.isdir(path) else hidden_files).append(path)
    return Layout(writable=roots, read_only=_unique(finder.read_only), missing=_unique(finder.missing),
                  sealed=_unique(finder.sealed), hidden_dirs=_unique(hidden_dirs),
                  hidden_files=_unique(hidden_files), notes=tuple(notes))


class _Finder:
    """Sorts protected paths into read-only, missing and sealed, following links."""

    def __init__(self, roots: tuple[Path, ...]) -> None:
        self.roots = roots
        self.read_only: list[Path] = []
        self.missing: list[Path] = []
        self.sealed: list[Path] = []

    def root_of(self, path: Path) -> Path | None:
        return next((r for r in self.roots if _within(path, r)), None)

    def protect(self, path: Path, depth: int = 0) -> None:
        root = self.root_of(path)
        if root is None or depth > _MAX_LINK_DEPTH:
            return  # outside every writable root it is read-only already
        current = root
        for part in path.relative_to(root).parts:
            step = current / part
            if os.path.islink(step):
                # The link could be swapped for a real folder: its folder is sealed,
                # and what it points to is protected in its turn.
                self.sealed.append(current)
                rest = path.relative_to(step)
                self.protect(Path(os.path.realpath(step)) / rest, depth + 1)
                return
            if not os.path.lexists(step):
                self.missing.append(step)
                return
            if step != path and not os.path.isdir(step):
                self.read_only.append(step)  # a file where a folder should be (`.git` file)
                return
            current = step
        self.read_only.append(path)

    def follow_git_file(self, root: Path) -> None:
        """A `.git` file (a worktree, a submodule) names the folder git really uses."""
        dot_git = root / ".git"
        if os.path.islink(dot_git) or not os.path.isfile(dot_git):
            return
        gitdir = _gitdir_of(dot_git)
        if gitdir is None:
            return
        for folder in (gitdir, _common_dir(gitdir)):
            if folder is not None:
                for name in PROTECTED_IN_GITDIR:
                    self.protect(folder / name)


def _gitdir_of(dot_git: Path) -> Path | None:
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = first.removeprefix("gitdir:").strip()
    return Path(os.path.realpath(dot_git.parent / target)) if target else None


def _common_dir(gitdir: Path) -> Path | None:
    try:
        text = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return Path(os.path.realpath(gitdir / text)) if text else None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _unique(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))


def configured_hooks_folders(roots: Iterable[Path]) -> tuple[Path, ...]:
    """The folders ``core.hooksPath`` names for these repositories (from any config git
    reads: the repository's, the user's, the system's). Reading config runs nothing."""
    git = shutil.which("git")
    if git is None:
        return ()
    found: list[Path] = []
    for root in roots:
        if not os.path.lexists(root / ".git"):
            continue
        try:
            done = subprocess.run([git, "-C", os.fspath(root), "config", "--get", "core.hooksPath"],
                                  capture_output=True, text=True, timeout=10, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            continue
        value = done.stdout.strip()
        if done.returncode == 0 and value:
            found.append(Path(os.path.abspath(root / os.path.expanduser(value))))
    return tuple(found)
