"""Checkpointer: snapshots of the workspace, taken as the assistant works.

The engine calls it (through the :class:`loom_engine.checkpoints.Checkpoints` protocol)
before each user prompt, after each ``bash`` call and each sub-agent, and when a run
ends. A snapshot stats the workspace through the shadow index and, when nothing
changed, writes nothing: the same tree is recorded again. Each snapshot is one line of
``snapshots.jsonl`` in the shadow repository's directory; its tree is kept by a ref.

Files above the size cap, and files beyond the total cap, are left out of the
snapshot and listed in its record: they are never restored, deleted or read.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import stat
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..private_files import open_private, private_folder, write_private
from .files import link_on_path
from .model import LeftOut, Snapshot, SnapshotCaps, SnapshotKind, TooManyFiles
from .shadow import ShadowRepo, shadow_dir

LOG_NAME = "snapshots.jsonl"
PROMPT_TEXT_CHARS = 200
# Every this many prompts, the packs are made one (keeps the shadow repository small).
PACK_EVERY = 20


@dataclass(frozen=True)
class SnapshotFailure:
    """Why the last snapshot could not be taken (the run goes on without it)."""

    kind: SnapshotKind
    message: str


class Checkpointer:
    """Snapshots of one workspace in its shadow repository under ``root`` (``<data>/snapshots``).

    Thread-safe, and safe between processes (an flock on the repository's directory):
    sub-agents running in parallel, or two Looms in one workspace, take turns.
    """

    def __init__(self, workspace: Path, root: Path, *, caps: SnapshotCaps | None = None,
                 git: str | None = None, exclude: Sequence[Path] = ()) -> None:
        """``exclude``: Loom's own folders (its data dir), never snapshotted if inside the workspace."""
        self.workspace = Path(os.path.realpath(workspace))
        self.caps = caps or SnapshotCaps()
        self.repo = ShadowRepo(self.workspace, shadow_dir(root, self.workspace), git=git, exclude=exclude)
        self.session_id: str | None = None
        self.last_failure: SnapshotFailure | None = None
        self._pending: asyncio.Future[None] | None = None  # the prompt's snapshot, being taken
        self._dirty = False  # a tool that may change files ran since the last snapshot
        self.too_many_files = False  # set once a snapshot found too many files: no more are tried
        self._lock = threading.RLock()
        self._depth = 0  # how deep this process holds the lock (the flock is taken once)
        self._log_cache: tuple[int, int, tuple[Snapshot, ...]] | None = None

    @property
    def git_dir(self) -> Path:
        return self.repo.git_dir

    @property
    def _log(self) -> Path:
        return self.repo.git_dir / LOG_NAME

    # --- the engine's protocol (never raises: a failed snapshot must not stop a run) --

    async def before_prompt(self, session_id: str | None, prompt_id: str, text: str) -> None:
        """Start the prompt's snapshot and return: it overlaps the request (the first one
        in a big workspace hashes every file); a tool that may change files waits for it."""
        self.session_id = session_id
        self._pending = asyncio.ensure_future(self._quietly("prompt", prompt_id=prompt_id, prompt_text=text))

    async def before_tool(self, tool_name: str, tool_input: Mapping[str, object]) -> None:
        await self._settled()
        self._dirty = True

    async def after_tool(self, tool_name: str, tool_input: Mapping[str, object]) -> None:
        await self._settled()
        await self._quietly("tool")
        self._dirty = False

    async def after_run(self) -> None:
        """Waits for the prompt's snapshot (a process ending mid-snapshot would lose it);
        takes one only if a tool that may change files ran since the last (an abort
        mid-call): a run that only talked, or whose last call was already followed by
        one, adds nothing to the end of ``loom run``."""
        await self._settled()
        if self._dirty:
            await self._quietly("run_end")
            self._dirty = False

    async def _settled(self) -> None:
        pending, self._pending = self._pending, None
        # A future of another event loop (a run that ended without its after_run) is
        # done or never will be here; the lock keeps snapshots in order anyway.
        if pending is not None and pending.get_loop() is asyncio.get_running_loop():
            # Shielded: an abort of the run must not leave the prompt without its snapshot.
            try:
                await asyncio.shield(pending)
            except asyncio.CancelledError:
                self._pending = pending  # still being taken: the next call waits for it
                raise

    async def _quietly(self, kind: SnapshotKind, **fields: str) -> None:
        if self.too_many_files:
            return
        try:
            await asyncio.to_thread(self.snapshot, kind, **fields)
        except Exception as error:  # whatever it is, the assistant's work goes on without it
            self.last_failure = SnapshotFailure(kind, str(error) or type(error).__name__)

    # --- snapshots --------------------------------------------------------------------

    def snapshot(self, kind: SnapshotKind, *, session_id: str | None = None, prompt_id: str | None = None,
                 prompt_text: str = "") -> Snapshot:
        """Take a snapshot of the workspace now and record it."""
        with self._locked():
            self.repo.ensure()
            history = self.snapshots()
            previous = history[-1] if history else None
            tree, total, left_out = self._stage(previous)
            if previous is None or tree != previous.tree:
                self.repo.keep(tree)
            snap = Snapshot(id=(previous.id + 1) if previous else 1, tree=tree, time=time.time(), kind=kind,
                            session_id=session_id or self.session_id, prompt_id=prompt_id,
                            prompt_text=prompt_text[:PROMPT_TEXT_CHARS], total_bytes=total, left_out=left_out)
            self._append(snap)
            if kind == "prompt":
                self._prune((*history, snap))
            self.last_failure = None
            return snap

    def _stage(self, previous: Snapshot | None) -> tuple[str, int, tuple[LeftOut, ...]]:
        """Bring the shadow index up to date with the workspace; (tree, total bytes, left out)."""
        look, tracked = self.repo.candidates()
        if len(look) > self.caps.max_files:
            self.too_many_files = True
            raise TooManyFiles(f"{len(look):,} files to look at, over the {self.caps.max_files:,} snapshots "
                               "are taken of; snapshots are off for this workspace until Loom restarts")
        adds: dict[str, int] = {}
        removes: list[str] = []
        left_out: list[LeftOut] = []
        links: dict[str, bool] = {}  # folder -> a link (or a file) stands there now
        for path in sorted(look):
            folder = os.path.dirname(path)
            if folder not in links:
                links[folder] = link_on_path(self.workspace, path) is not None
            if links[folder]:  # behind a link now: gone from the workspace, never read
                if path in tracked:
                    removes.append(path)
                continue
            try:
                info = os.lstat(self.workspace / path)
            except (FileNotFoundError, NotADirectoryError):
                if path in tracked:
                    removes.append(path)
                continue
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                if path in tracked:
                    removes.append(path)
            elif info.st_size > self.caps.max_file_bytes:
                left_out.append(LeftOut(path, info.st_size, "too_big"))
                if path in tracked:
                    removes.append(path)
            else:
                adds[path] = info.st_size
        if not adds and not removes and previous is not None:
            return previous.tree, previous.total_bytes, tuple(left_out)
        total = previous.total_bytes if previous is not None else 0
        changed_tracked = [p for p in (*adds, *removes) if p in tracked]
        if previous is not None and changed_tracked:
            old = self.repo.tree_entries(previous.tree, changed_tracked)
            total -= sum(entry.size for entry in old.values())
        kept: list[str] = []
        for path, size in adds.items():
            if total + size > self.caps.max_total_bytes:
                left_out.append(LeftOut(path, size, "over_total"))
                if path in tracked:
                    removes.append(path)
                continue
            total += size
            kept.append(path)
        self.repo.update_index(kept, removes)
        return self.repo.write_tree(), max(total, 0), tuple(sorted(left_out, key=lambda item: item.path))

    # --- the record -------------------------------------------------------------------

    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every snapshot kept, oldest first."""
        try:
            info = self._log.stat()
        except FileNotFoundError:
            return ()
        key = (info.st_size, info.st_mtime_ns)
        if self._log_cache is not None and self._log_cache[:2] == key:
            return self._log_cache[2]
        snaps: list[Snapshot] = []
        with open(self._log, encoding="utf-8") as handle:
            for line in handle:
                try:
                    snaps.append(_from_record(json.loads(line)))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut off by a kill
        result = tuple(snaps)
        self._log_cache = (*key, result)
        return result

    def latest(self) -> Snapshot | None:
        history = self.snapshots()
        return history[-1] if history else None

    def find(self, snapshot_id: int) -> Snapshot | None:
        return next((s for s in self.snapshots() if s.id == snapshot_id), None)

    def _append(self, snap: Snapshot) -> None:
        line = json.dumps(_to_record(snap), ensure_ascii=False, separators=(",", ":")) + "\n"
        with open_private(self._log) as handle:
            handle.write(line)

    def _prune(self, history: tuple[Snapshot, ...]) -> None:
        """Keep the snapshots of the last ``keep_prompts`` prompts (and everything after the oldest)."""
        prompts = [s for s in history if s.kind == "prompt"]
        if len(prompts) % PACK_EVERY == 0:
            # Each snapshot that stored files added a small pack: one pack again, with deltas.
            self.repo.run(["repack", "-a", "-d", "-q"], check=False)
        if len(prompts) <= self.caps.keep_prompts:
            return
        first_kept = prompts[-self.caps.keep_prompts].id
        kept = tuple(s for s in history if s.id >= first_kept)
        dropped = {s.tree for s in history if s.id < first_kept} - {s.tree for s in kept}
        write_private(self._log, "".join(json.dumps(_to_record(s), ensure_ascii=False, separators=(",", ":"))
                                         + "\n" for s in kept))
        self.repo.drop(dropped)
        if dropped:
            self.repo.prune()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            private_folder(self.repo.git_dir)  # copies of the user's files
            with open_private(self.repo.git_dir / "loom.lock") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the workspace's snapshot lock (a restore does, so no snapshot interleaves)."""
        with self._locked():
            yield


def _to_record(snap: Snapshot) -> dict[str, Any]:
    record = asdict(snap)
    record["left_out"] = [[item.path, item.size, item.reason] for item in snap.left_out]
    return {k: v for k, v in record.items() if v not in (None, "", [])}


def _from_record(record: dict[str, Any]) -> Snapshot:
    left_out = tuple(LeftOut(str(p), int(s), r) for p, s, r in record.get("left_out", []))
    snap = Snapshot(id=int(record["id"]), tree=str(record["tree"]), time=float(record["time"]),
                    kind=record["kind"], session_id=record.get("session_id"), prompt_id=record.get("prompt_id"),
                    prompt_text=str(record.get("prompt_text", "")), total_bytes=int(record.get("total_bytes", 0)))
    return replace(snap, left_out=left_out) if left_out else snap
