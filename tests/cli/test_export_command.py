"""`loom export`: a real `loom run` against the fake server (text and thinking, a tool
call, a call the headless run refuses, a sub-agent, a secret in the answer) exported as
ATIF and checked against Harbor's own Trajectory model and for its content; and the
one-line errors for a session or format that is not there."""

from __future__ import annotations

import json
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from loom_cli.export_command import EXIT_USAGE, ExportError, ExportRequest, run_export
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.harbor_models import trajectory_model
from tests.doubles.loom_command import isolate_loom, loom, loom_env

KEY = "sk-ant-api03-" + "A" * 90


def test_a_headless_run_exported_as_atif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        fake_llm: FakeLLMServer) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / "notes.md").write_text("hello notes\n")
    fake_llm.enqueue(
        Reply.tool("read_file", {"path": "notes.md"}, text="Let me look.", thinking="Read it first.",
                   usage={"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 40}),
        Reply.tool("bash", {"command": "rm -rf build"}, usage={"input_tokens": 150, "output_tokens": 10}),
        Reply.tool("task", {"description": "look", "prompt": "list the markdown files"},
                   usage={"input_tokens": 170, "output_tokens": 12}),
        Reply.tool("glob", {"pattern": "*.md"}, usage={"input_tokens": 50, "output_tokens": 5}),  # the sub-agent
        Reply.text("notes.md", usage={"input_tokens": 60, "output_tokens": 3}),
        Reply.text(f"The notes say hello. {KEY}", usage={"input_tokens": 200, "output_tokens": 30}),
    )
    env = loom_env(tmp_path, fake_llm)
    run = loom(["run", "what is in notes.md?", "-o", "json"], workspace, env)
    assert run.returncode == 0, run.stderr
    session_id = json.loads(run.stdout)["session_id"]

    done = loom(["export", session_id[:-2], "--format", "atif", "-o", str(tmp_path / "t.json")], workspace, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    trajectory = json.loads((tmp_path / "t.json").read_text())
    isolate_loom(monkeypatch, tmp_path)  # the same data folder as the runs above
    assert run_export(ExportRequest(session="last", format="atif", cwd=workspace)) == (tmp_path / "t.json").read_text()
    trajectory_model().model_validate(trajectory)  # Harbor's own model of ATIF-v1.8

    assert trajectory["schema_version"] == "ATIF-v1.8" and trajectory["session_id"] == session_id
    assert trajectory["agent"]["name"] == "loom" and trajectory["agent"]["model_name"] == "claude-sonnet-4-6"
    steps = trajectory["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent", "agent", "agent"]
    assert steps[0]["message"] == "what is in notes.md?"
    read, refused, task, answer = steps[1:]
    assert (read["message"], read["reasoning_content"]) == ("Let me look.", "Read it first.")
    assert read["tool_calls"][0]["function_name"] == "read_file"
    assert read["tool_calls"][0]["arguments"] == {"path": "notes.md"}
    assert read["observation"]["results"][0]["content"].endswith("hello notes")
    assert read["metrics"] == {"prompt_tokens": 140, "completion_tokens": 20, "cached_tokens": 40,
                               "cost_usd": pytest.approx(0.000612)}
    [denied] = refused["observation"]["results"]
    assert denied["extra"] == {"is_error": True, "refused": True}
    assert denied["content"].startswith("Refused: this is a non-interactive run")
    [child] = trajectory["subagent_trajectories"]
    assert task["observation"]["results"][0]["subagent_trajectory_ref"][0]["trajectory_id"] == child["trajectory_id"]
    assert [s["source"] for s in child["steps"]] == ["user", "agent", "agent"]
    assert child["steps"][0]["message"] == "list the markdown files"
    assert child["steps"][1]["observation"]["results"][0]["content"] == "notes.md"
    assert child["final_metrics"]["total_prompt_tokens"] == 110
    assert answer["message"] == "The notes say hello. [REDACTED:anthropic-key]"
    assert KEY not in json.dumps(trajectory)
    assert all(s["timestamp"] <= t["timestamp"] for s, t in pairwise(steps))
    final = trajectory["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"], final["total_steps"]) == (660, 72, 5)
    assert final["total_cost_usd"] == pytest.approx(0.003402)  # the sub-agent's cost included


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          fake_llm: FakeLLMServer) -> None:
    isolate_loom(monkeypatch, tmp_path)
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    for name in ("20260101-000000-aaaaaa", "20260101-000000-bbbbbb"):
        (sessions / f"{name}.jsonl").write_text(json.dumps({"type": "session", "id": name, "workspace": "/x"}) + "\n")
    cases = {("nope", "atif"): "no session 'nope' (loom sessions --all lists them)",
             ("2026", "atif"): "session prefix '2026' names 2 sessions (20260101-000000-",
             ("last", "atif"): f"no session in {tmp_path}",
             ("2026", "html"): "unknown export format 'html' (known: atif)"}
    for (session, format_), said in cases.items():
        with pytest.raises(ExportError) as caught:
            run_export(ExportRequest(session=session, format=format_, cwd=tmp_path))
        assert caught.value.code == EXIT_USAGE and str(caught.value).startswith(said)
    done = loom(["export", "nope"], tmp_path, loom_env(tmp_path, fake_llm))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "loom: no session 'nope' (loom sessions --all lists them)\n"
