"""`loom run -o json` and `-o stream-json` in Claude Code's shapes (issue 22, item 5).

What `claude -p` 2.1 printed against the fake server for the same scenarios is recorded
in fixtures/claude_code/ (tests/doubles/record_claude_code.py re-records it). Loom's
output is compared with it key by key: every key Claude Code prints is there with a value
of the same JSON type (ids, times and counts may differ), the messages come in the same
order, and the keys Claude Code has that Loom does not print are the few listed below,
each with its reason. Loom's extra keys are allowed (JSON readers pass over them).
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builtin_tools import default_tools
from loom_cli.headless import EXIT_ERROR, EXIT_LIMIT, EXIT_OK, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"

# Claude Code's keys Loom does not print, and why.
NOT_PRINTED: dict[str, set[str]] = {
    # Claude Code's own switches and product facts, its timing breakdown, the HTTP status
    # of a failed request (Loom's error result says the cause in words), and a per-model
    # usage table (Loom's is one total; sub-agents' models are not told apart).
    "result": {"api_error_status", "ttft_ms", "ttft_stream_ms", "time_to_request_ms", "fast_mode_state",
               "modelUsage"},
    # Anthropic's server-side counters (web search, service tier, geography), not kept by Loom.
    "usage": {"server_tool_use", "service_tier", "cache_creation", "inference_geo", "iterations", "speed"},
    # Claude Code's installation: its version, key source, output style, plugins, telemetry
    # switches, memory folder; and its built-in agent types.
    "init": {"apiKeySource", "claude_code_version", "output_style", "plugins", "analytics_disabled",
             "product_feedback_disabled", "memory_paths", "fast_mode_state", "agents"},
    "assistant": {"request_id", "error"},
    "message": {"container", "stop_details", "context_management"},
}
# Values whose keys or type depend on the tool (a tool's arguments; Claude Code's Read result is an
# object, an error's a string): present, not compared.
ANY_TYPE = {"tool_use_result", "input", "tool_input"}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _compare(theirs: Any, ours: Any, where: str, section: str, problems: list[str]) -> None:
    """Every key of ``theirs`` in ``ours`` with the same JSON type (null matches any: a
    field Claude Code leaves empty here may be filled by Loom), recursively."""
    if theirs is None:
        return
    if _kind(theirs) != _kind(ours):
        problems.append(f"{where}: Claude Code has {_kind(theirs)}, Loom {_kind(ours)}")
        return
    if isinstance(theirs, dict):
        for key, value in theirs.items():
            if key in NOT_PRINTED.get(section, set()):
                continue
            if key not in ours:
                problems.append(f"{where}.{key}: missing")
            elif key not in ANY_TYPE:
                inner = key if key in NOT_PRINTED else section
                _compare(value, ours[key], f"{where}.{key}", inner, problems)
    elif isinstance(theirs, list) and theirs and ours:
        for item in ours:  # each of Loom's items against Claude Code's of the same type
            like = [t for t in theirs if isinstance(t, dict) and isinstance(item, dict)
                    and t.get("type") == item.get("type")] or theirs[:1]
            _compare(like[0], item, f"{where}[]", section, problems)


def _section(line: dict[str, Any]) -> str:
    return "init" if line.get("subtype") == "init" else str(line["type"])


def assert_same_shape(theirs: list[dict[str, Any]], ours: list[dict[str, Any]]) -> None:
    assert [_section(line) for line in ours] == [_section(line) for line in theirs]
    problems: list[str] = []
    for mine, recorded in zip(ours, theirs, strict=True):
        _compare(recorded, mine, _section(recorded), _section(recorded), problems)
    assert not problems, "\n".join(problems)


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.stream.jsonl").read_text().splitlines() if line]


def recorded_result(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return value


def test_the_comparison_finds_a_missing_key_and_a_wrong_type() -> None:
    theirs = recorded("text")
    ours = json.loads(json.dumps(theirs))
    del ours[-1]["permission_denials"]
    ours[-1]["total_cost_usd"] = "0.1"
    ours[1]["message"]["content"][0]["text"] = 5
    with pytest.raises(AssertionError) as caught:
        assert_same_shape(theirs, ours)
    said = str(caught.value)
    assert "result.permission_denials: missing" in said
    assert "result.total_cost_usd: Claude Code has number, Loom string" in said
    assert "assistant.message.content[].text: Claude Code has string, Loom number" in said


def _agent(tmp_path: Path, server: FakeLLMServer, max_turns: int = 100) -> Agent:
    (tmp_path / "hello.py").write_text("print('hello')\n")
    provider = create_provider("anthropic", api_key="k", base_url=server.anthropic_base_url)
    return Agent(AgentConfig(model="claude-sonnet-4-5", interactive=False, max_turns=max_turns),
                 AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)))


async def _run(tmp_path: Path, server: FakeLLMServer, output_format: str, max_turns: int = 100
               ) -> tuple[int, list[dict[str, Any]]]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(_agent(tmp_path, server, max_turns), "do the task", output_format, out, err)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


SCENARIOS: dict[str, tuple[list[Reply], int, int]] = {  # replies, max turns, exit code
    "text": ([Reply.text("hello")], 100, EXIT_OK),
    "tool": ([Reply.tool("read_file", {"path": "hello.py"}), Reply.text("It prints hello.")], 100, EXIT_OK),
    "max_turns": ([Reply.tool("read_file", {"path": "hello.py"})], 1, EXIT_LIMIT),
}


@pytest.mark.parametrize("name", SCENARIOS)
async def test_stream_json_has_claude_codes_messages_and_result(
        tmp_path: Path, fake_llm: FakeLLMServer, name: str) -> None:
    replies, max_turns, exit_code = SCENARIOS[name]
    fake_llm.enqueue(*replies)
    code, lines = await _run(tmp_path, fake_llm, "stream-json", max_turns)
    assert code == exit_code
    assert_same_shape(recorded(name), lines)
    assert lines[-1]["subtype"] == recorded(name)[-1]["subtype"]


@pytest.mark.parametrize("name", SCENARIOS)
async def test_json_is_claude_codes_result_object(tmp_path: Path, fake_llm: FakeLLMServer, name: str) -> None:
    replies, max_turns, exit_code = SCENARIOS[name]
    fake_llm.enqueue(*replies)
    code, lines = await _run(tmp_path, fake_llm, "json", max_turns)
    assert code == exit_code and len(lines) == 1
    assert_same_shape([recorded_result(name)], lines)


async def test_an_error_ends_with_an_error_result(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.error(400, "bad thing", type="invalid_request_error"))
    code, lines = await _run(tmp_path, fake_llm, "stream-json")
    assert code == EXIT_ERROR
    theirs = recorded("error")
    # Claude Code words the failure as an assistant message too; Loom's is only in the result.
    assert_same_shape([theirs[0], theirs[-1]], lines)
    result = lines[-1]
    assert result["is_error"] is True and "bad thing" in result["result"]
    assert result["subtype"] == "error_during_execution" and result["errors"] == [result["result"]]


async def test_the_values_say_what_happened(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("read_file", {"path": "hello.py"}, usage={"input_tokens": 100, "output_tokens": 7}),
                     Reply.text("It prints hello.", usage={"input_tokens": 120, "output_tokens": 5}))
    code, lines = await _run(tmp_path, fake_llm, "stream-json")
    assert code == EXIT_OK
    init, call, result_message, answer, result = lines
    assert init["model"] == "claude-sonnet-4-5" and "read_file" in init["tools"]
    assert init["session_id"] == result["session_id"] == call["session_id"]
    assert call["message"]["content"] == [{"type": "tool_use", "id": call["message"]["content"][0]["id"],
                                           "name": "read_file", "input": {"path": "hello.py"}}]
    block = result_message["message"]["content"][0]
    assert block["tool_use_id"] == call["message"]["content"][0]["id"] and "print('hello')" in block["content"]
    assert answer["message"]["content"] == [{"type": "text", "text": "It prints hello."}]
    assert result["result"] == "It prints hello." and result["num_turns"] == 2
    assert result["usage"]["input_tokens"] == 220 and result["usage"]["output_tokens"] == 12
    assert result["total_cost_usd"] > 0 and result["permission_denials"] == []
    # Loom's own keys stay, beside Claude Code's.
    assert result["stop_reason"] == "end_turn" and "context_window" in init and "metrics" in result


def test_a_denied_call_is_in_permission_denials(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}, id="toolu_deny1"), Reply.text("I could not."))
    done = loom(["run", "make a file", "-o", "stream-json"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert_same_shape(recorded("denied"), lines)
    assert lines[-1]["permission_denials"] == [{"tool_name": "bash", "tool_use_id": "toolu_deny1",
                                                "tool_input": {"command": "touch made.txt"}}]
    assert not (repo / "made.txt").exists()


async def test_input_stream_json_runs_each_message_in_the_same_session(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """As `claude -p --input-format stream-json`: per message an init, the messages and a result."""
    fake_llm.enqueue(Reply.text("first answer"), Reply.text("second answer"))
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(_agent(tmp_path, fake_llm), "first q", "stream-json", out, err,
                              more_prompts=["second q"])
    assert code == EXIT_OK, err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [_section(line) for line in lines] == ["init", "assistant", "result"] * 2
    assert [lines[2]["result"], lines[5]["result"]] == ["first answer", "second answer"]
    assert lines[0]["session_id"] == lines[5]["session_id"]
    second = json.dumps(fake_llm.requests[1].messages)
    assert "first q" in second and "first answer" in second and "second q" in second


async def test_a_sub_agent_s_messages_carry_the_parent_call(tmp_path: Path) -> None:
    from loom_engine.providers.scripted import ScriptedProvider

    (tmp_path / "notes.md").write_text("hello\n")
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "task", "input": {"description": "look", "prompt": "list the files"}}]},
        {"tool_calls": [{"name": "glob", "input": {"pattern": "*.md"}}]},  # the sub-agent's turns
        {"text": "notes.md"},
        {"text": "There is one note."},
    ])
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)))
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(agent, "what is here?", "stream-json", out, err) == EXIT_OK, err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    task_id = lines[1]["message"]["content"][0]["id"]
    assert [(line["type"], line.get("parent_tool_use_id")) for line in lines] == [
        ("system", None), ("assistant", None),
        ("assistant", task_id), ("user", task_id), ("assistant", task_id),  # the sub-agent's
        ("user", None), ("assistant", None), ("result", None)]
    assert lines[-1]["num_turns"] == 2


async def test_secrets_are_redacted_in_every_message(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    key = "sk-ant-api03-" + "Ab3_-" * 18
    (tmp_path / "creds.txt").write_text(f"ANTHROPIC_API_KEY={key}\n")
    fake_llm.enqueue(Reply.tool("read_file", {"path": "creds.txt"}), Reply.text(f"The key is {key}."))
    code, lines = await _run(tmp_path, fake_llm, "stream-json")
    assert code == EXIT_OK
    printed = json.dumps(lines)
    assert key not in printed and key[:20] not in printed
    assert lines[-1]["result"].startswith("The key is ") and lines[2]["type"] == "user"
