"""What a batch leaves in its folder: ``results.jsonl`` (a line per task as it finishes) and
``preds.json`` (SWE-bench's predictions), written by the driver alone; and which tasks a
rerun skips.

``preds.json`` is ``{id: {"instance_id", "model_name_or_path", "model_patch"}}``: SWE-bench's
harness (``--predictions_path preds.json``) reads a JSON object as the list of its values
and needs ``instance_id`` in each; SWE-agent writes the same shape.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, cast, get_args

TaskStatus = Literal["done", "failed", "stopped"]
STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)

RESULTS_FILE = "results.jsonl"
PREDS_FILE = "preds.json"
DIFFS_FOLDER = "diffs"
LOCK_FILE = ".lock"


class ResultsError(Exception):
    """The batch folder's results cannot be read or written (one line)."""


@dataclass(frozen=True)
class TaskResult:
    """One task's outcome. ``stopped``: interrupted (Ctrl+C) or at a usage limit not waited
    for - not finished, so a rerun runs it again; ``failed``: the run ended in an error or
    at a limit of its own (turns, budget); a rerun skips it unless ``--retry-failed``."""

    id: str
    status: TaskStatus
    session_id: str | None = None
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    files_changed: tuple[str, ...] = ()
    diff_path: str | None = None  # relative to the batch folder (diffs/<id>.diff)
    error: str | None = None
    model: str | None = None  # the model the task ran on (preds.json's model_name_or_path)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "files_changed": list(self.files_changed)}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> TaskResult:
        """A result as :meth:`to_json` wrote it; ValueError when it is not one."""
        status = value.get("status")
        if not isinstance(value.get("id"), str) or status not in STATUSES:
            raise ValueError("not a task result (id and status)")
        files = value.get("files_changed") or []
        if not isinstance(files, list):
            raise ValueError("files_changed is not a list")
        try:
            return cls(id=cast(str, value["id"]), status=status,
                       session_id=_optional_text(value.get("session_id")),
                       turns=int(cast(int, value.get("turns") or 0)),
                       input_tokens=int(cast(int, value.get("input_tokens") or 0)),
                       output_tokens=int(cast(int, value.get("output_tokens") or 0)),
                       cost_usd=float(cast(float, value.get("cost_usd") or 0.0)),
                       duration_s=float(cast(float, value.get("duration_s") or 0.0)),
                       files_changed=tuple(str(name) for name in files),
                       diff_path=_optional_text(value.get("diff_path")), error=_optional_text(value.get("error")),
                       model=_optional_text(value.get("model")))
        except (TypeError, ValueError) as error:
            raise ValueError(f"not a task result ({error})") from None


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def read_results(out_dir: Path) -> dict[str, TaskResult]:
    """Each task's newest result in ``out_dir`` (a later line for an id replaces an earlier
    one: a retried task)."""
    return {result.id: result for result in _every_result(out_dir)}


def _every_result(out_dir: Path) -> list[TaskResult]:
    """Every line of ``out_dir``'s results, oldest first; a line cut short by a crash
    mid-write is skipped."""
    path = out_dir / RESULTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsError(f"{path}: cannot read: {error}") from None
    found: list[TaskResult] = []
    for line in text.splitlines():
        try:
            found.append(TaskResult.from_json(json.loads(line)))
        except ValueError:
            continue
    return found


def to_run(task_ids: Iterable[str], earlier: Mapping[str, TaskResult], *, retry_failed: bool) -> list[str]:
    """The tasks a (re)run runs: those never finished (no result, or stopped), and the
    failed ones when ``retry_failed``; in the file's order."""
    def wanted(task_id: str) -> bool:
        result = earlier.get(task_id)
        return result is None or result.status == "stopped" or (retry_failed and result.status == "failed")

    return [task_id for task_id in task_ids if wanted(task_id)]


class ResultsWriter:
    """The one writer of a batch folder's results (the driver's; workers never write here).

    Each result is appended to ``results.jsonl`` and flushed as it comes, so a crash or a
    Ctrl+C keeps every finished task; ``preds.json`` is rewritten whole (atomically) after
    each, from every task's newest result, including those of earlier runs.
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        try:
            (out_dir / DIFFS_FOLDER).mkdir(parents=True, exist_ok=True)
            self._lock = open(out_dir / LOCK_FILE, "a")  # held until close()
        except OSError as error:
            raise ResultsError(f"{out_dir}: cannot create the batch folder: {error.strerror or error}") from None
        try:  # two batches writing one folder would each skip the other's tasks half-done
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise ResultsError(f"{out_dir}: another `loom batch` is running with this folder") from None
        earlier = _every_result(out_dir)
        self._latest = {result.id: result for result in earlier}
        # What the folder's batch has cost so far, every attempt of every task counted.
        self.spent_usd = sum(result.cost_usd for result in earlier)

    def close(self) -> None:
        """Let another batch use the folder (the lock also goes with the process)."""
        self._lock.close()

    @property
    def latest(self) -> Mapping[str, TaskResult]:
        return self._latest

    def add(self, result: TaskResult) -> None:
        line = json.dumps(result.to_json(), ensure_ascii=False) + "\n"
        with open(self.out_dir / RESULTS_FILE, "a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())
        self._latest[result.id] = result
        self.spent_usd += result.cost_usd
        self._write_preds()

    def _write_preds(self) -> None:
        preds = {task_id: {"instance_id": task_id, "model_name_or_path": f"loom-{result.model or 'default'}",
                           "model_patch": self._patch(result)}
                 for task_id, result in self._latest.items() if result.status == "done"}
        path = self.out_dir / PREDS_FILE
        scratch = path.with_name(f".{PREDS_FILE}.{os.getpid()}")
        scratch.write_text(json.dumps(preds, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(scratch, path)

    def _patch(self, result: TaskResult) -> str:
        if result.diff_path is None:
            return ""
        try:
            return (self.out_dir / result.diff_path).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return ""
