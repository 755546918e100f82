"""Restore: the points one can go back to, the preview of going back, and doing it.

Who changed what is read from the sequence of snapshots (see :mod:`.model`): the
changes leading to a ``tool``/``run_end``/``restored`` snapshot were Loom's, those
leading to any other kind (a prompt's, a preview's) came from outside — the user in an
editor, another program. From that:

* a path changed from outside since the chosen snapshot is a **conflict**: it is left
  alone unless the user says otherwise;
* a path absent from the chosen snapshot is deleted only if the assistant created it
  after that snapshot; anything else (a file the user made, one too big to keep) is
  never deleted — there is no ``git clean`` here, only writes and unlinks of the paths
  listed in the plan;
* a restore first takes a snapshot, so restoring that one undoes it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..messages import Message, is_prompt
from .checkpoints import Checkpointer
from .files import delete_path, is_binary, link_on_path, link_reason, unified_diff, write_entry
from .model import FileAction, FileChange, RestorePlan, RestorePoint, RestoreResult, Snapshot, StalePlan
from .preimages import PreimageCheckpointer


def prompt_text(message: Message) -> str:
    """What was typed (a prompt with @-attachments keeps it in its meta)."""
    return str(message.meta.get("prompt", message.text))


# What keeps the workspace's past: snapshots (git), or pre-images of Loom's own edits (no git).
Snapshots = Checkpointer | PreimageCheckpointer


def snapshots_of(checkpoints: object) -> Snapshots | None:
    """What an agent's ``checkpoints`` keep, when they are one of Loom's (``agent.checkpoints``)."""
    return checkpoints if isinstance(checkpoints, (Checkpointer, PreimageCheckpointer)) else None


def restore_points(checkpointer: Snapshots | None, messages: Sequence[Message]) -> tuple[RestorePoint, ...]:
    """The conversation's prompts, oldest first, each with the snapshot taken just before it."""
    if isinstance(checkpointer, PreimageCheckpointer):
        return checkpointer.points([(m, prompt_text(m)) for m in messages if is_prompt(m)])
    snaps = checkpointer.snapshots() if checkpointer is not None else ()
    by_prompt = {s.prompt_id: s for s in snaps if s.kind == "prompt" and s.prompt_id}
    prompts = [m for m in messages if is_prompt(m)]
    runs = {m.id: _run_span(snaps, by_prompt[m.id]) for m in prompts if m.id in by_prompt}
    diffs = checkpointer.repo.diff_many(runs.values()) if checkpointer is not None else {}
    points: list[RestorePoint] = []
    for index, message in enumerate(prompts, 1):
        snap = by_prompt.get(message.id)
        span = runs.get(message.id)
        changed = tuple(sorted(c.path for c in diffs.get(span, ()))) if span else ()
        points.append(RestorePoint(index=index, prompt_id=message.id, text=prompt_text(message),
                                   time=snap.time if snap else None, files_changed=changed, snapshot=snap))
    return tuple(points)


def _run_span(snaps: Sequence[Snapshot], start: Snapshot) -> tuple[str, str]:
    """(tree before, tree after) the run of ``start``'s prompt: up to Loom's last
    snapshot before the next one taken from outside."""
    end = start
    for snap in snaps:
        if snap.id <= start.id:
            continue
        if not snap.by_loom:
            break
        end = snap
    return start.tree, end.tree


def _attribution(checkpointer: Checkpointer, span: Sequence[Snapshot]) -> tuple[set[str], set[str]]:
    """(paths changed from outside Loom, paths the assistant created) over ``span``."""
    outside: set[str] = set()
    created: set[str] = set()
    steps = list(itertools.pairwise(span))
    diffs = checkpointer.repo.diff_many((before.tree, after.tree) for before, after in steps)
    for before, after in steps:
        for change in diffs.get((before.tree, after.tree), ()):
            if not after.by_loom:
                outside.add(change.path)
            elif change.status == "A":
                created.add(change.path)
    return outside, created


def plan_restore(checkpointer: Snapshots, target: Snapshot, *, session_id: str | None = None) -> RestorePlan:
    """The preview of restoring the workspace to ``target``; nothing in it is changed."""
    if isinstance(checkpointer, PreimageCheckpointer):
        return checkpointer.plan(target)
    with checkpointer.locked():
        current = checkpointer.snapshot("check", session_id=session_id)
        span = [s for s in checkpointer.snapshots() if s.id >= target.id]
        outside, created = _attribution(checkpointer, span)
        differing = checkpointer.repo.diff(target.tree, current.tree)
        paths = [c.path for c in differing]
        old = checkpointer.repo.tree_entries(target.tree, paths)
        new = checkpointer.repo.tree_entries(current.tree, paths)
        contents = checkpointer.repo.blobs([e.blob for e in (*old.values(), *new.values())])
    target_left = {item.path for item in target.left_out}
    current_left = {item.path for item in current.left_out}
    changes: list[FileChange] = []
    for change in differing:
        path = change.path
        was, now = old.get(path), new.get(path)
        blocked: str | None = None
        action: FileAction
        if was is None:
            action = "delete"
            if path in target_left:
                blocked = "it was too big to be kept in that snapshot"
            elif path not in created:
                blocked = "the assistant did not create it"
        elif path in current_left:
            action = "modify"
            blocked = "it is too big to keep a copy of the current version"
        else:
            action = "recreate" if now is None else "modify"
        before = contents.get(now.blob, b"") if now else b""
        after = contents.get(was.blob, b"") if was else b""
        binary = is_binary(before) or is_binary(after)
        changes.append(FileChange(path=path, action=action, diff="" if binary else unified_diff(path, before, after),
                                  conflict=path in outside, blocked=blocked, binary=binary))
    return RestorePlan(target=target, current=current, changes=_behind_links(checkpointer.workspace, changes))


def _behind_links(workspace: Path, changes: Sequence[FileChange]) -> tuple[FileChange, ...]:
    """``changes`` with each path whose folder is a link (or a file) now left alone, with
    the reason — unless this restore deletes that link first (deletions go first)."""
    deleted = {c.path for c in changes if c.action == "delete" and c.blocked is None}
    out: list[FileChange] = []
    for change in changes:
        link = link_on_path(workspace, change.path) if change.blocked is None else None
        if link is not None and link not in deleted:
            change = replace(change, blocked=link_reason(link))
        out.append(change)
    return tuple(out)


def apply_restore(checkpointer: Snapshots, plan: RestorePlan, *, include_conflicts: bool = False,
                  session_id: str | None = None) -> RestoreResult:
    """Restore the paths of ``plan`` (conflicts only with ``include_conflicts``); the
    workspace must be as it was when the plan was made (:class:`StalePlan` otherwise)."""
    if isinstance(checkpointer, PreimageCheckpointer):
        return checkpointer.apply(plan, include_conflicts)
    chosen = plan.applied(include_conflicts)
    skipped = tuple(c for c in plan.changes if c not in chosen)
    with checkpointer.locked():
        before = checkpointer.snapshot("before_restore", session_id=session_id)
        if before.tree != plan.current.tree:
            raise StalePlan("files changed since the preview was made; look at the preview again")
        entries = checkpointer.repo.tree_entries(plan.target.tree, [c.path for c in chosen if c.action != "delete"])
        contents = checkpointer.repo.blobs(e.blob for e in entries.values())
        done: list[FileChange] = []
        errors: list[str] = []
        # Deletions first: a path the assistant turned into a link or a file may stand
        # where a folder of the snapshot must come back.
        for change in sorted(chosen, key=lambda c: c.action != "delete"):
            try:
                if change.action == "delete":
                    delete_path(checkpointer.workspace, change.path)
                else:
                    entry = entries[change.path]
                    write_entry(checkpointer.workspace, entry.path, entry.mode, contents.get(entry.blob, b""))
            except (OSError, KeyError, ValueError) as error:
                errors.append(f"{change.path}: {getattr(error, 'strerror', None) or error}")
                continue
            done.append(change)
        checkpointer.snapshot("restored", session_id=session_id)
    return RestoreResult(restored=tuple(done), skipped=skipped, undo=before, errors=tuple(errors))


def last_undo(checkpointer: Snapshots) -> Snapshot | None:
    """The snapshot taken just before the last restore (restoring it undoes that restore)."""
    return next((s for s in reversed(checkpointer.snapshots()) if s.kind == "before_restore"), None)
