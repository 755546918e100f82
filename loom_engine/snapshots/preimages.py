"""Without git: the content each file had before Loom's own edit tools changed it.

When no ``git`` binary can be found, the workspace cannot be snapshotted as a whole;
this keeps, per prompt, a copy of each file just before ``edit_file``, ``write_file``,
``multi_edit`` or ``apply_patch`` first changed it (and the content each left behind,
to tell a later change from outside Loom). Only those files can be restored: what
``bash`` or anything else changed is not known here.

It offers the same records as :class:`~.checkpoints.Checkpointer` (snapshots,
points, plans, results); :mod:`.restore` sends its calls here when given one.
Stored under ``<data>/snapshots/<hash>-preimages``: ``log.jsonl`` and ``blobs/<sha256>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..messages import Message
from ..private_files import open_private, private_folder, write_private
from .checkpoints import SnapshotFailure
from .files import delete_path, inside, is_binary, link_on_path, link_reason, unified_diff, write_entry
from .model import (
    FileAction,
    FileChange,
    RestorePlan,
    RestorePoint,
    RestoreResult,
    Snapshot,
    SnapshotCaps,
    SnapshotKind,
    StalePlan,
)
from .shadow import shadow_dir

EDIT_TOOLS = frozenset({"edit_file", "write_file", "multi_edit", "apply_patch"})
_PATCH_HEADERS = ("*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: ")
_GONE = "-"  # the blob of a file that did not exist
_TOO_BIG = "!"  # the blob of a file too big to keep


def edited_paths(tool_name: str, tool_input: Mapping[str, object]) -> tuple[str, ...]:
    """The files an edit tool call is about to change, as given."""
    if tool_name == "apply_patch":
        patch = tool_input.get("patch")
        if not isinstance(patch, str):
            return ()
        return tuple(line[len(h):].strip() for line in patch.splitlines() for h in _PATCH_HEADERS
                     if line.startswith(h))
    path = tool_input.get("path")
    return (path,) if tool_name in EDIT_TOOLS and isinstance(path, str) else ()


class PreimageCheckpointer:
    """The engine's ``checkpoints`` when git is missing (see the module's docstring)."""

    def __init__(self, workspace: Path, root: Path, *, caps: SnapshotCaps | None = None) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.caps = caps or SnapshotCaps()
        self.folder = shadow_dir(root, self.workspace).with_name(shadow_dir(root, self.workspace).name
                                                                 + "-preimages")
        self.session_id: str | None = None
        self.last_failure: SnapshotFailure | None = None
        self._lock = threading.RLock()

    # --- the engine's protocol ----------------------------------------------------------

    # They never raise: a copy that could not be kept must not stop the assistant's work.

    async def before_prompt(self, session_id: str | None, prompt_id: str, text: str) -> None:
        self.session_id = session_id
        try:
            self.snapshot("prompt", session_id=session_id, prompt_id=prompt_id, prompt_text=text)
        except Exception as error:
            self.last_failure = SnapshotFailure("prompt", str(error) or type(error).__name__)

    async def before_tool(self, tool_name: str, tool_input: Mapping[str, object]) -> None:
        self._quietly("pre", tool_name, tool_input)

    async def after_tool(self, tool_name: str, tool_input: Mapping[str, object]) -> None:
        self._quietly("post", tool_name, tool_input)

    def _quietly(self, what: str, tool_name: str, tool_input: Mapping[str, object]) -> None:
        try:
            paths = [self._relative(p) for p in edited_paths(tool_name, tool_input)]
            self._keep(what, [p for p in paths if p is not None])
        except Exception as error:
            self.last_failure = SnapshotFailure("tool", str(error) or type(error).__name__)

    async def after_run(self) -> None:
        return None

    # --- records ------------------------------------------------------------------------

    def snapshot(self, kind: SnapshotKind, *, session_id: str | None = None, prompt_id: str | None = None,
                 prompt_text: str = "") -> Snapshot:
        with self._lock:
            history = self.snapshots()
            snap = Snapshot(id=(history[-1].id + 1) if history else 1, tree="", time=time.time(), kind=kind,
                            session_id=session_id or self.session_id, prompt_id=prompt_id,
                            prompt_text=prompt_text[:200])
            self._append({"type": "snapshot", "id": snap.id, "time": snap.time, "kind": kind,
                          "session_id": snap.session_id, "prompt_id": prompt_id, "prompt_text": snap.prompt_text})
            return snap

    def snapshots(self) -> tuple[Snapshot, ...]:
        return tuple(Snapshot(id=r["id"], tree="", time=r["time"], kind=r["kind"], session_id=r.get("session_id"),
                              prompt_id=r.get("prompt_id"), prompt_text=r.get("prompt_text") or "")
                     for r in self._records() if r.get("type") == "snapshot")

    def find(self, snapshot_id: int) -> Snapshot | None:
        return next((s for s in self.snapshots() if s.id == snapshot_id), None)

    def _records(self) -> list[dict[str, Any]]:
        try:
            lines = (self.folder / "log.jsonl").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return records

    def _append(self, record: dict[str, Any]) -> None:
        private_folder(self.folder)  # copies of the user's files
        with open_private(self.folder / "log.jsonl") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def _relative(self, path: str) -> str | None:
        full = Path(os.path.realpath(self.workspace / path))
        try:
            return str(full.relative_to(self.workspace))
        except ValueError:
            return None  # outside the workspace: not Loom's to restore

    def _keep(self, what: str, paths: Sequence[str]) -> None:
        """Record each file's content now: ``pre`` once per prompt (the first edit's), ``post`` each time."""
        with self._lock:
            history = self.snapshots()
            current = history[-1].id if history else 0
            seen = {r["path"] for r in self._records() if r.get("type") == "pre" and r.get("at") == current}
            for path in paths:
                if what == "pre" and path in seen:
                    continue
                self._append({"type": what, "at": current, "path": path, "blob": self._store(path)})

    def _store(self, path: str) -> str:
        full = self.workspace / path
        try:
            if full.stat().st_size > self.caps.max_file_bytes:
                return _TOO_BIG
            data = full.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return _GONE
        digest = hashlib.sha256(data).hexdigest()
        blob = self.folder / "blobs" / digest
        if not blob.exists():
            private_folder(blob.parent)
            write_private(blob, data)
        return digest

    def _content(self, blob: str) -> bytes | None:
        return None if blob in (_GONE, _TOO_BIG) else (self.folder / "blobs" / blob).read_bytes()

    # --- points, plans, restores ----------------------------------------------------------

    def points(self, prompts: Sequence[tuple[Message, str]]) -> tuple[RestorePoint, ...]:
        """(prompt message, its text) -> points, each with the files edited during its run."""
        records = self._records()
        by_prompt = {s.prompt_id: s for s in self.snapshots() if s.kind == "prompt" and s.prompt_id}
        points = []
        for index, (message, text) in enumerate(prompts, 1):
            snap = by_prompt.get(message.id)
            changed = ()
            if snap is not None:
                end = next((s.id for s in self.snapshots() if s.id > snap.id and s.kind == "prompt"), None)
                changed = tuple(sorted({r["path"] for r in records if r.get("type") == "pre" and r["at"] >= snap.id
                                        and (end is None or r["at"] < end)}))
            points.append(RestorePoint(index=index, prompt_id=message.id, text=text,
                                       time=snap.time if snap else None, files_changed=changed, snapshot=snap))
        return tuple(points)

    def plan(self, target: Snapshot) -> RestorePlan:
        records = self._records()
        earliest: dict[str, str] = {}
        latest_post: dict[str, str] = {}
        for record in records:
            if record.get("type") == "pre" and record["at"] >= target.id:
                earliest.setdefault(record["path"], record["blob"])
            elif record.get("type") == "post" and record["at"] >= target.id:
                latest_post[record["path"]] = record["blob"]
        current = self.snapshot("check")
        changes = []
        for path, blob in sorted(earliest.items()):
            link = link_on_path(self.workspace, path)
            if link is not None:  # never read through it: it may lead anywhere
                changes.append(FileChange(path=path, action="modify" if blob != _GONE else "delete", diff="",
                                          blocked=link_reason(link)))
                continue
            now = self._store_hash(path)
            if now == blob:
                continue
            before = self._content(now) if now not in (_GONE, _TOO_BIG) else b""
            after = self._content(blob) or b""
            blocked = None
            action: FileAction
            if blob == _TOO_BIG or now == _TOO_BIG:
                action, blocked = "modify", "it is too big to keep a copy of"
            elif blob == _GONE:
                action = "delete"
            else:
                action = "recreate" if now == _GONE else "modify"
            binary = is_binary(before or b"") or is_binary(after)
            changes.append(FileChange(path=path, action=action, conflict=latest_post.get(path) != now,
                                      blocked=blocked, binary=binary,
                                      diff="" if binary else unified_diff(path, before or b"", after)))
        return RestorePlan(target=target, current=current, changes=tuple(changes))

    def _store_hash(self, path: str) -> str:
        return self._store(path)

    def apply(self, plan: RestorePlan, include_conflicts: bool) -> RestoreResult:
        chosen = plan.applied(include_conflicts)
        skipped = tuple(c for c in plan.changes if c not in chosen)
        with self._lock:
            fresh = {c.path: c for c in self.plan(plan.target).changes}
            if any(fresh.get(c.path) != c for c in plan.changes):
                raise StalePlan("files changed since the preview was made; look at the preview again")
            undo = self.snapshot("before_restore")
            self._keep("pre", [c.path for c in chosen])
            earliest: dict[str, str] = {}
            for record in self._records():
                if record.get("type") == "pre" and plan.target.id <= record["at"] < undo.id:
                    earliest.setdefault(record["path"], record["blob"])
            done, errors = [], []
            for change in chosen:
                try:
                    if change.action == "delete":
                        delete_path(self.workspace, change.path)
                    else:
                        inside(self.workspace, change.path)
                        write_entry(self.workspace, change.path, "", self._content(earliest[change.path]) or b"")
                except (OSError, KeyError, ValueError) as error:
                    errors.append(f"{change.path}: {getattr(error, 'strerror', None) or error}")
                    continue
                done.append(change)
            self._keep("post", [c.path for c in done])
        return RestoreResult(restored=tuple(done), skipped=skipped, undo=undo, errors=tuple(errors))
