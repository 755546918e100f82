"""A task's own checkout: a detached git worktree of the task's repository at its base, in a
scratch folder, and the diff of what the task changed.

The user's checkout is never touched: no checkout, index, stash or branch of theirs changes
(the worktree is detached, and the diff is read through a scratch index of its own). The
repository's ``.git`` gains only the worktree's entry, removed with it. A repository given
by URL is cloned once into Loom's data folder and its worktrees are made from there.

A worktree is leased while a worker has it: a small file in Loom's data folder naming it,
locked (``flock``) by the worker's process. A worker that dies (a second Ctrl+C, a killed
driver, a crash) cannot remove its worktree, but the kernel lets go of its lock, so the
next batch finds the lease unlocked and removes what it names. A live worker's lease is
locked, so another batch running side by side never touches its worktree.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loom_engine.paths import data_dir

from .tasks import is_clone_url

# Git as the batch uses it: no pager, no prompt for credentials (a worker has no terminal).
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}
# A task's scratch folder's name starts with this (and the task's id).
_PREFIX = "loom-batch-"


class WorktreeError(Exception):
    """The task's checkout could not be made (one line: the task fails with it)."""


@dataclass(frozen=True)
class Lease:
    """A worktree's lease file, locked for as long as ``fd`` is open in its worker."""

    file: Path
    fd: int

    def end(self) -> None:
        """The worktree is no longer this worker's to clean up (removed, or kept on purpose)."""
        with contextlib.suppress(OSError):
            self.file.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)


@dataclass(frozen=True)
class Worktree:
    repo: Path  # the repository it belongs to (the user's, or the cached clone)
    path: Path
    base: str  # the full commit id it started from
    cwd: Path  # where the task runs: the worktree's counterpart of the folder the task named
    lease: Lease | None = None


@dataclass(frozen=True)
class Changes:
    diff: str  # `git diff --binary` of base against the worktree, new files included
    files: tuple[str, ...]


def git(args: list[str], cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Git's standard output; WorktreeError with its own message when it fails."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **_GIT_ENV, **(env or {})}, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise WorktreeError("git is not installed (needed for a worktree per task)") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {args[0]} took over {timeout:g} s") from None
    if done.returncode != 0:
        said = [line for line in (done.stderr.strip() or done.stdout.strip()).splitlines() if line.strip()]
        # Git's own first "fatal:" says what went wrong; advice lines may follow it.
        first = next((line for line in said if line.startswith(("fatal:", "error:"))), said[-1] if said else None)
        raise WorktreeError(f"git {args[0]}: {first or f'exit {done.returncode}'}")
    return done.stdout


def local_repository(repo: str) -> tuple[Path, Path]:
    """The repository a task runs in - its top folder, or the cached clone of its URL
    (cloned now if this is the first task to want it; the lock lets one worker clone while
    the others wait) - and the folder the task named, relative to it."""
    if not is_clone_url(repo):
        path = Path(repo)
        if not path.is_dir():
            raise WorktreeError(f"{repo}: no such folder")
        top = Path(git(["rev-parse", "--show-toplevel"], path).strip())
        return top, path.resolve().relative_to(top.resolve())
    cache = data_dir() / "batch" / "clones" / hashlib.sha256(repo.encode()).hexdigest()[:16]
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cache / "HEAD").is_file():
            scratch = Path(tempfile.mkdtemp(prefix=cache.name + ".", dir=cache.parent))
            try:
                git(["clone", "--bare", "--quiet", repo, str(scratch)], cache.parent)
                scratch.rename(cache)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return cache, Path()


def add_worktree(repo: str, base: str | None, task_id: str) -> Worktree:
    """A detached worktree of ``repo`` at ``base`` (None: its HEAD) in a new scratch folder."""
    root, inside = local_repository(repo)
    commit = _commit(root, base or "HEAD", fetch=is_clone_url(repo) and base is not None)
    path = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{task_id}-"))
    lease = _take_lease(root, path)
    try:
        with _one_at_a_time(root):
            git(["worktree", "add", "--detach", "--quiet", str(path), commit], root)
    except WorktreeError:
        shutil.rmtree(path, ignore_errors=True)
        lease.end()
        raise
    return Worktree(repo=root, path=path, base=commit, cwd=path / inside, lease=lease)


def _leases() -> Path:
    folder = data_dir() / "batch" / "worktrees"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _take_lease(repo: Path, path: Path) -> Lease:
    """The lease, written and locked under a scratch name, then renamed into place: a lease
    another batch can see is always whole and locked (the lock is the file's, not the name's)."""
    fd, scratch = tempfile.mkstemp(dir=_leases(), prefix=".", suffix=".tmp")
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, json.dumps({"repo": str(repo), "path": str(path)}).encode())
    final = Path(scratch).with_name(f"{path.name}.json")
    os.rename(scratch, final)
    return Lease(final, fd)


def remove_abandoned_worktrees() -> int:
    """Remove the worktrees whose workers died without removing them (their leases are
    unlocked); how many. Leases held by live workers, of this batch or another, are left."""
    removed = 0
    for file in sorted(_leases().glob(f"{_PREFIX}*.json")):
        try:
            fd = os.open(file, os.O_RDONLY)
        except OSError:
            continue  # removed by its worker as we looked
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its worker is alive
            if _remove_leased(os.read(fd, 64 * 1024)):
                removed += 1
            with contextlib.suppress(OSError):
                file.unlink()
        finally:
            os.close(fd)
    return removed


def _remove_leased(record: bytes) -> bool:
    try:
        named = json.loads(record)
        repo, path = Path(named["repo"]), Path(named["path"])
    except (ValueError, TypeError, KeyError):
        return False
    if not path.name.startswith(_PREFIX):  # only a batch's own scratch folders
        return False
    if not path.exists():  # its folder gone (a cleaned /tmp): only the repository's entry is left
        if repo.is_dir():
            with _one_at_a_time(repo), contextlib.suppress(WorktreeError):
                git(["worktree", "prune"], repo)
        return False
    remove_worktree(Worktree(repo=repo, path=path, base="", cwd=path))
    return True


def _commit(root: Path, base: str, *, fetch: bool) -> str:
    try:
        return git(["rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"], root).strip()
    except WorktreeError:
        if not fetch:
            raise WorktreeError(f"base {base!r}: no such commit in {root}") from None
    try:  # a commit newer than the cached clone
        git(["fetch", "--quiet", "origin", base], root)
        return git(["rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}"], root).strip()
    except WorktreeError as error:
        raise WorktreeError(f"base {base!r}: not found in the repository's remote ({error})") from None


def changes(worktree: Worktree) -> Changes:
    """What the task changed against its base: edits, deletions and new files (those git
    ignores left out), read through a scratch index so the worktree's own is left as the
    task left it."""
    with tempfile.TemporaryDirectory(prefix="loom-batch-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(["read-tree", worktree.base], worktree.path, env=env)
        git(["add", "--all", "."], worktree.path, env=env)
        diff = git(["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", worktree.base], worktree.path,
                   env=env)
        names = git(["diff", "--cached", "--name-only", "-z", worktree.base], worktree.path, env=env)
    return Changes(diff=diff, files=tuple(name for name in names.split("\0") if name))


def keep_worktree(worktree: Worktree) -> None:
    """The worktree left for the user (--keep-worktrees): no later batch removes it."""
    if worktree.lease is not None:
        worktree.lease.end()


def remove_worktree(worktree: Worktree) -> None:
    """The worktree gone, from disk and from its repository's list; never raises (a folder
    left behind is pruned by git later)."""
    with _one_at_a_time(worktree.repo):
        with contextlib.suppress(WorktreeError):
            git(["worktree", "remove", "--force", "--force", str(worktree.path)], worktree.repo)
        if worktree.path.exists():
            shutil.rmtree(worktree.path, ignore_errors=True)
            with contextlib.suppress(WorktreeError):
                git(["worktree", "prune"], worktree.repo)
    keep_worktree(worktree)  # gone: nothing left for a later batch to clean up


@contextlib.contextmanager
def _one_at_a_time(repo: Path) -> Iterator[None]:
    """One worktree added or removed at a time in ``repo``, among all of this user's workers:
    git removes ``.git/worktrees`` when its last entry goes, under the feet of an ``add``
    making a new entry there. The lock is in Loom's data folder, not in the repository."""
    locks = data_dir() / "batch" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(os.fsencode(os.path.realpath(repo))).hexdigest()[:16]
    with open(locks / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
