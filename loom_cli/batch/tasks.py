"""The tasks file of `loom batch`: a JSON object a line, checked whole before anything runs.

A line: ``{"id": "fix-1", "prompt": "...", "repo": "path or clone URL", "base": "commit",
"model": ..., "max_turns": ..., "max_budget_usd": ..., "permission_mode": ...}``; only
``id`` and ``prompt`` are needed (``cwd`` is another name for ``repo``). Every bad line
is named in one error, so a 200-line file is fixed in one pass rather than one run each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from loom_engine.permissions.modes import MODES, PermissionMode

# A repository given by URL is cloned (once, into Loom's data folder); anything else is a path.
_CLONE_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)
# An id names the diff file (DIR/diffs/<id>.diff) and the worktree: no path separators.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_KEYS = frozenset({"id", "prompt", "repo", "cwd", "base", "model", "max_turns", "max_budget_usd",
                   "permission_mode"})


class TaskFileError(Exception):
    """The tasks file cannot be run: every bad line, by number, one a line."""


@dataclass(frozen=True)
class BatchTask:
    id: str
    prompt: str
    repo: str  # an absolute local path, or a clone URL
    base: str | None = None  # a commit-ish of ``repo``; None: its HEAD
    # None: the batch's default (its flags, then the settings).
    model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    permission_mode: PermissionMode | None = None
    line: int = 0  # where it is in the tasks file (1-based), for messages


def is_clone_url(repo: str) -> bool:
    return bool(_CLONE_URL.match(repo))


def parse_tasks(path: Path, default_repo: str | None = None) -> list[BatchTask]:
    """The tasks of ``path``; ``default_repo``: the repository of a task that names none
    (the driver gives the current one). Relative paths are taken from the current folder.
    Raises :class:`TaskFileError` listing every bad line; blank lines are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TaskFileError(f"{path}: cannot read the tasks file: {error}") from None
    tasks: list[BatchTask] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            task = _task(raw, number, default_repo)
        except ValueError as error:
            problems.append(f"line {number}: {error}")
            continue
        if task.id in first_line:
            problems.append(f"line {number}: duplicate id {task.id!r} (first on line {first_line[task.id]})")
            continue
        first_line[task.id] = number
        tasks.append(task)
    if not tasks and not problems:
        problems.append("no tasks (one JSON object a line)")
    if problems:
        raise TaskFileError(f"{path}: " + ("\n".join(problems) if len(problems) == 1 else
                                           f"{len(problems)} bad lines\n" + "\n".join(problems)))
    return tasks


def _task(raw: str, number: int, default_repo: str | None) -> BatchTask:
    try:
        value = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object but {type(value).__name__}")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(_KEYS))})")
    problems: list[str] = []
    task_id = _text(value, "id", problems, required=True)
    if task_id is not None and not _ID.match(task_id):
        problems.append(f"id {task_id!r}: use letters, digits, '.', '_' and '-' (at most 128, not first)")
    prompt = _text(value, "prompt", problems, required=True)
    if prompt is not None and not prompt.strip():
        problems.append("prompt is empty")
    if "repo" in value and "cwd" in value:
        problems.append("give repo or cwd, not both")
    repo = _text(value, "repo" if "repo" in value else "cwd", problems) or default_repo
    if repo is None:
        problems.append("no repo (and the current folder is not in a git repository)")
    base = _text(value, "base", problems)
    model = _text(value, "model", problems)
    max_turns = value.get("max_turns")
    if max_turns is not None and (type(max_turns) is not int or max_turns < 1):
        problems.append(f"max_turns must be a whole number of 1 or more, not {json.dumps(max_turns)}")
    budget = value.get("max_budget_usd")
    if budget is not None and (type(budget) not in (int, float) or budget < 0):
        problems.append(f"max_budget_usd must be a number of 0 or more, not {json.dumps(budget)}")
    mode = value.get("permission_mode")
    if mode is not None and mode not in MODES:
        problems.append(f"permission_mode {json.dumps(mode)}: use one of {', '.join(MODES)}")
    if problems or task_id is None or prompt is None or repo is None:
        raise ValueError("; ".join(problems))
    return BatchTask(id=task_id, prompt=prompt, repo=repo if is_clone_url(repo) else str(Path(repo).resolve()),
                     base=base, model=model, max_turns=max_turns,
                     max_budget_usd=float(budget) if budget is not None else None,
                     permission_mode=mode, line=number)


def _text(value: Mapping[str, object], key: str, problems: list[str], *, required: bool = False) -> str | None:
    found = value.get(key)
    if found is None:
        if required:
            problems.append(f"missing {key}")
        return None
    if not isinstance(found, str):
        problems.append(f"{key} must be a string, not {json.dumps(found)}")
        return None
    return found
