"""A session file as an ATIF trajectory, checked against Harbor's own models: what a
compaction, a rewind, an image, a call with broken arguments and a user's refusal become,
the totals, and the errors. (A real run of `loom run` exported end to end is in
tests/cli/test_export_command.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loom_engine.messages import ImagePart, Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.redact import Redactor
from loom_engine.sessions.atif import session_trajectory
from loom_engine.sessions.store import SessionError, SessionStore
from loom_engine.transcript import SubagentRun, refused_result_text
from loom_engine.usage import Usage
from tests.doubles.harbor_models import trajectory_model

SECRET = "plainword" * 4  # no known shape: only the exact value says it is secret


def _answer(*parts: Any, tokens: int = 10, cost: float = 0.01, time: float = 1_800_000_000.0) -> Message:
    call = {"model": "m-2", "usage": Usage(input_tokens=tokens, output_tokens=2, cache_read_input_tokens=5,
                                            cache_creation_input_tokens=1).to_dict(), "cost_usd": cost, "time": time}
    return Message.assistant(*parts, call=call)


def _export(tmp_path: Path, build: Any) -> dict[str, Any]:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m-1", redactor=None)
    build(writer)
    writer.close()
    trajectory = session_trajectory(store.path_for(writer.id), agent_version="9.9.9",
                                    redactor=Redactor.for_values([SECRET]))
    trajectory_model().model_validate(trajectory)
    return trajectory


def test_a_compaction_a_rewind_an_image_and_a_refusal(tmp_path: Path) -> None:
    def build(writer: Any) -> None:
        writer.append_message(Message("user", (TextPart("look at this"), ImagePart("image/png", "AAAA"))))
        writer.append_message(_answer(ThinkingPart("hm", signature="s"), TextPart("checking"),
                                      ToolUsePart("c1", "bash", {}, raw_input='{"command": "ls'),
                                      ToolUsePart("c2", "edit_file", {"path": "a.py"})))
        writer.append_message(Message.tool_results([ToolResultPart("c1", "arguments are not JSON", is_error=True),
                                                    ToolResultPart("c2", refused_result_text(), is_error=True)]))
        writer.append_compaction([Message.user("Summary of the work so far", summary=True)])
        writer.append_message(Message.user("<system-reminder>a.py changed</system-reminder>", reminder=True))
        writer.append_model("m-3")
        writer.append_message(_answer(TextPart(f"key is {SECRET}"), tokens=20, cost=0.02))
        writer.append_rewind("msg_x", [])

    trajectory = _export(tmp_path, build)
    steps = trajectory["steps"]
    assert [(s["step_id"], s["source"]) for s in steps] == [(1, "user"), (2, "agent"), (3, "system"),
                                                            (4, "system"), (5, "agent"), (6, "system")]
    assert steps[0]["message"] == "look at this" and steps[0]["extra"] == {"images": 1}
    first = steps[1]
    assert (first["message"], first["reasoning_content"], first["model_name"]) == ("checking", "hm", "m-2")
    assert first["timestamp"] == "2027-01-15T08:00:00+00:00"
    assert first["tool_calls"][0] == {"tool_call_id": "c1", "function_name": "bash", "arguments": {},
                                      "extra": {"raw_arguments": '{"command": "ls'}}
    broken, refused = first["observation"]["results"]
    assert broken["extra"] == {"is_error": True} and broken["source_call_id"] == "c1"
    assert refused["extra"] == {"is_error": True, "refused": True}
    assert first["metrics"] == {"prompt_tokens": 16, "completion_tokens": 2, "cached_tokens": 5, "cost_usd": 0.01,
                                "extra": {"cache_creation_input_tokens": 1}}
    assert steps[2] == {"step_id": 3, "source": "system", "message": "Summary of the work so far",
                        "is_copied_context": True, "extra": {"summary": True}}
    assert steps[3]["extra"] == {"reminder": True} and "timestamp" in steps[3]
    assert steps[4]["message"] == "key is [REDACTED:api-key]"
    assert steps[5]["message"] == "rewound to just before prompt msg_x" and steps[5]["extra"] == {"mode": "both"}
    assert trajectory["agent"] == {"name": "loom", "version": "9.9.9", "model_name": "m-3",
                                   "extra": {"provider": "anthropic"}}
    assert trajectory["final_metrics"] == {"total_prompt_tokens": 42, "total_completion_tokens": 4,
                                           "total_cached_tokens": 10, "total_cost_usd": 0.03, "total_steps": 6}
    assert SECRET not in json.dumps(trajectory)


def test_a_sub_agent_is_an_embedded_trajectory_its_cost_in_the_total(tmp_path: Path) -> None:
    def build(writer: Any) -> None:
        writer.append_message(Message.user("review it"))
        writer.append_message(_answer(ToolUsePart("t1", "task", {"description": "rev", "prompt": "look"})))
        writer.append_subagent(SubagentRun(
            call_id="t1", description="rev", agent_type="reviewer", model="m-small",
            messages=(Message.user("look"), _answer(TextPart("fine"), cost=0.5)), usage=Usage(input_tokens=10),
            cost_usd=0.75, started=1_800_000_100.0, ended=1_800_000_160.0, outcome="finished"))
        writer.append_message(Message.tool_results([ToolResultPart("t1", "fine\n\n[sub-agent 'rev': ...]")]))
        writer.append_message(_answer(TextPart("all fine")))

    trajectory = _export(tmp_path, build)
    [child] = trajectory["subagent_trajectories"]
    [result] = trajectory["steps"][1]["observation"]["results"]
    assert result["subagent_trajectory_ref"] == [{"trajectory_id": child["trajectory_id"],
                                                  "session_id": trajectory["session_id"],
                                                  "extra": {"description": "rev"}}]
    assert child["trajectory_id"] == f"{trajectory['session_id']}/t1"
    assert child["agent"]["model_name"] == "m-small" and child["agent"]["extra"]["agent_type"] == "reviewer"
    assert [(s["source"], s["message"]) for s in child["steps"]] == [("user", "look"), ("agent", "fine")]
    assert child["steps"][0]["timestamp"] == "2027-01-15T08:01:40+00:00"
    assert child["extra"]["outcome"] == "finished"
    assert child["final_metrics"]["total_cost_usd"] == 0.75  # the run's own total, its sub-agents included
    assert trajectory["final_metrics"]["total_cost_usd"] == 0.77  # two answers of 0.01, and the sub-agent


def test_results_without_their_call_are_a_system_step(tmp_path: Path) -> None:
    def build(writer: Any) -> None:
        writer.append_compaction([Message.user("summary", summary=True),
                                  Message.tool_results([ToolResultPart("gone", "old output")])])

    steps = _export(tmp_path, build)["steps"]
    assert steps[1]["source"] == "system"
    assert steps[1]["observation"]["results"] == [{"source_call_id": None, "content": "old output",
                                                   "extra": {"tool_call_id": "gone"}}]


def test_a_session_without_messages_or_a_broken_file_is_an_error(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    writer.close()
    with pytest.raises(SessionError, match="has no messages to export"):
        session_trajectory(store.path_for(writer.id), agent_version="1")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type":"session","id":"b"}\n{not json\n{"type":"turn_state"}\n')
    with pytest.raises(SessionError, match="malformed at line 2"):
        session_trajectory(broken, agent_version="1")
    with pytest.raises(SessionError, match="no session file"):
        session_trajectory(tmp_path / "missing.jsonl", agent_version="1")
