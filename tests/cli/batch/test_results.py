"""results.jsonl and preds.json: one writer, a line per task as it ends, the newest line of a
task wins, and which tasks a rerun runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_cli.batch.results import ResultsError, ResultsWriter, TaskResult, read_results, to_run


def test_a_result_round_trips_through_json() -> None:
    result = TaskResult("t1", "done", session_id="s", turns=2, input_tokens=10, output_tokens=3, cost_usd=0.5,
                        duration_s=1.5, files_changed=("a.py", "b/c.py"), diff_path="diffs/t1.diff", model="m")
    assert TaskResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_the_writer_appends_and_rewrites_preds_from_the_newest_results(tmp_path: Path) -> None:
    (tmp_path / "diffs").mkdir()
    (tmp_path / "diffs" / "t1.diff").write_text("diff --git a/x b/x\n")
    writer = ResultsWriter(tmp_path)
    writer.add(TaskResult("t1", "failed", error="boom"))
    writer.add(TaskResult("t2", "stopped"))
    assert json.loads((tmp_path / "preds.json").read_text()) == {}  # neither finished with a patch
    writer.add(TaskResult("t1", "done", diff_path="diffs/t1.diff", model="claude-x"))
    assert json.loads((tmp_path / "preds.json").read_text()) == {
        "t1": {"instance_id": "t1", "model_name_or_path": "loom-claude-x", "model_patch": "diff --git a/x b/x\n"}}
    assert [json.loads(line)["status"] for line in (tmp_path / "results.jsonl").read_text().splitlines()] == [
        "failed", "stopped", "done"]
    writer.close()
    # A later writer (a rerun) starts from what is there; a line cut short by a crash is skipped.
    with open(tmp_path / "results.jsonl", "a") as out:
        out.write('{"id": "t3", "sta')
    assert {k: v.status for k, v in read_results(tmp_path).items()} == {"t1": "done", "t2": "stopped"}
    rerun = ResultsWriter(tmp_path)
    rerun.add(TaskResult("t3", "done"))
    assert set(json.loads((tmp_path / "preds.json").read_text())) == {"t1", "t3"}


def test_a_rerun_runs_the_unfinished_and_with_retry_failed_the_failed() -> None:
    earlier = {"a": TaskResult("a", "done"), "b": TaskResult("b", "failed"), "c": TaskResult("c", "stopped")}
    assert to_run(["a", "b", "c", "d"], earlier, retry_failed=False) == ["c", "d"]
    assert to_run(["a", "b", "c", "d"], earlier, retry_failed=True) == ["b", "c", "d"]


def test_one_batch_at_a_time_writes_a_folder_and_every_attempt_s_cost_counts(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    writer.add(TaskResult("t1", "failed", cost_usd=0.25))
    with pytest.raises(ResultsError, match="another `loom batch` is running with this folder"):
        ResultsWriter(tmp_path)
    writer.close()
    rerun = ResultsWriter(tmp_path)
    rerun.add(TaskResult("t1", "done", cost_usd=0.5))  # a retry: the failed attempt was paid for too
    assert rerun.spent_usd == 0.75
    rerun.close()
    assert ResultsWriter(tmp_path).spent_usd == 0.75
