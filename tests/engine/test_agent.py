"""The Agent and its turn loop, driven by the scripted provider (the engine's own replaying double)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import (
    Aborted,
    Error,
    Finished,
    MaxTurnsReached,
    PermissionRequested,
    TextDelta,
    ToolCallStarted,
    ToolFinished,
)
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.tools.base import ToolContext
from loom_engine.tools.function_tool import tool
from loom_engine.turn_state import TurnState
from loom_engine.workspace import Workspace


@tool(read_only=True)
async def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


THOUGHT_S = 1.0  # how long the user of the permission test thinks before answering


@tool
async def slow(seconds: float, ctx: ToolContext) -> str:
    """Sleep."""
    await asyncio.sleep(seconds)
    return "slept"


def replay(turns: Any) -> ScriptedProvider:
    """A scripted provider that records the requests it was sent."""
    return ScriptedProvider(turns, record_requests=True)


def make_agent(tmp_path: Path, provider: Any, **config: Any) -> Agent:
    return Agent(AgentConfig(model="test-model", **config),
                 AgentParts(provider=provider, tools=[echo, slow], workspace=Workspace.at(tmp_path)),
                 system_prompt="You are a test.")


async def collect(agent: Agent, prompt: str) -> list[Any]:
    return [event async for event in agent.run(prompt)]


async def test_text_answer_finishes(tmp_path: Path) -> None:
    provider = replay([{"text": "Hello", "chunk_size": 3}])
    agent = make_agent(tmp_path, provider)
    events = await collect(agent, "hi")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert isinstance(events[-1], Finished) and events[-1].result == "Hello"
    assert [m.role for m in agent.messages] == ["user", "assistant"]


async def test_tool_calls_then_answer_carries_whole_history(tmp_path: Path) -> None:
    provider = replay([
        {"tool_calls": [{"name": "echo", "input": {"text": "a"}}, {"name": "echo", "input": {"text": "b"}}]},
        {"text": "done"},
    ])
    agent = make_agent(tmp_path, provider)
    events = await collect(agent, "go")
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.content for e in finished] == ["echo: a", "echo: b"]
    second = provider.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool"]
    assert [r.content for r in second[2].tool_results_parts] == ["echo: a", "echo: b"]
    assert isinstance(events[-1], Finished) and events[-1].num_turns == 2


async def test_bad_tool_calls_become_error_results_and_the_run_goes_on(tmp_path: Path) -> None:
    provider = replay([
        {"tool_calls": [{"name": "nope", "input": {}}, {"name": "echo", "input": {"wrong": 1}}]},
        {"text": "recovered"},
    ])
    agent = make_agent(tmp_path, provider)
    events = await collect(agent, "go")
    results = provider.requests[1].messages[-1].tool_results_parts
    assert results[0].is_error and "Unknown tool 'nope'. Available tools: echo, slow" in results[0].content
    assert results[1].is_error and "Invalid arguments for echo" in results[1].content
    assert "text: Field required" in results[1].content
    assert isinstance(events[-1], Finished)


async def test_max_turns_stops_with_a_valid_transcript(tmp_path: Path) -> None:
    provider = replay(lambda request, i: {"tool_calls": [{"name": "echo", "input": {"text": str(i)}}]})
    agent = make_agent(tmp_path, provider, max_turns=3)
    events = await collect(agent, "loop")
    assert isinstance(events[-1], MaxTurnsReached) and events[-1].num_turns == 3
    assert len(provider.requests) == 3
    assert agent.messages[-1].role == "tool"


async def test_provider_error_ends_with_error_event(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, replay([{"error": {"kind": "auth", "message": "fake auth"}}]))
    events = await collect(agent, "hi")
    assert isinstance(events[-1], Error) and events[-1].kind == "auth"


async def test_abort_during_stream_keeps_partial_text_and_tells_the_model(tmp_path: Path) -> None:
    provider = replay([
        {"text": "one two three " + "more " * 200, "chunk_size": 4, "delay": 0.01},
        {"text": "ok"},
    ])
    agent = make_agent(tmp_path, provider)
    events: list[Any] = []
    async for event in agent.run("talk"):
        events.append(event)
        if isinstance(event, TextDelta) and "three" in "".join(
                e.text for e in events if isinstance(e, TextDelta)):
            agent.abort()
    assert isinstance(events[-1], Aborted)
    roles = [m.role for m in agent.messages]
    assert roles == ["user", "assistant", "user"]
    assert agent.messages[1].text.startswith("one two three") and agent.messages[1].meta["interrupted"]
    assert "interrupted" in agent.messages[2].text and "streaming" in agent.messages[2].text
    # The next run sends the interruption along.
    events = await collect(agent, "again")
    assert isinstance(events[-1], Finished)
    assert "interrupted" in provider.requests[1].messages[2].text


async def test_abort_during_tool_gives_synthetic_results(tmp_path: Path) -> None:
    provider = replay([
        {"tool_calls": [{"name": "echo", "input": {"text": "a"}}, {"name": "slow", "input": {"seconds": 30}}]},
        {"text": "fine"},
    ])
    agent = make_agent(tmp_path, provider)

    async def abort_after_echo() -> list[Any]:
        # Abort once the slow call has started (not after a pause the first call may outlast).
        events = []
        async for event in agent.run("go"):
            events.append(event)
            if isinstance(event, ToolCallStarted) and event.name == "slow":
                agent.abort()
        return events

    events = await asyncio.wait_for(abort_after_echo(), 30)  # a bound on a hang, not a timing
    assert isinstance(events[-1], Aborted)
    results = agent.messages[2].tool_results_parts
    assert results[0].content == "echo: a" and not results[0].is_error
    assert results[1].is_error and "Interrupted" in results[1].content
    assert "slow" in agent.messages[3].text


async def test_thousand_turns_no_recursion_error(tmp_path: Path) -> None:
    provider = replay(lambda request, i: {"text": "end"} if i == 1000 else
                              {"tool_calls": [{"name": "echo", "input": {"text": str(i)}}]})
    agent = make_agent(tmp_path, provider, max_turns=2000, loop_guard=0)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive turn function would blow this at once
    try:
        events = await collect(agent, "long")
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(events[-1], Finished) and events[-1].num_turns == 1001


async def test_loop_guard_warns_then_stops(tmp_path: Path) -> None:
    provider = replay(lambda request, i: {"tool_calls": [{"name": "echo", "input": {"text": "same"}}]})
    agent = make_agent(tmp_path, provider, loop_guard=2)
    events = await collect(agent, "loop")
    assert isinstance(events[-1], Error) and events[-1].kind == "loop_guard"
    warned = [r for m in agent.messages for r in m.tool_results_parts if "Warning" in r.content]
    assert warned
    assert len(provider.requests) == 4


def test_turn_state_round_trip() -> None:
    state = TurnState.initial(parent_turn_id="p").next_turn()
    assert state.turn == 1 and state.parent_turn_id == "p" and not state.is_final
    assert TurnState.from_dict(state.to_dict()) == state
    assert state.finish("end_turn").is_final


async def test_permission_ask_waits_for_the_answer(tmp_path: Path) -> None:
    from loom_engine.permissions.answer import PermissionAnswer

    class AskEverything:
        def check(self, tool_name: str, target: Any, **_: Any) -> Any:
            from types import SimpleNamespace
            return SimpleNamespace(behavior="ask", reason="test asks", suggested_rules=("slow",), hint="")

        def allow_for_session(self, rules: Any) -> None:
            self.session = tuple(rules)

    provider = replay([{"tool_calls": [{"name": "slow", "input": {"seconds": 0}}]}, {"text": "ok"}])
    agent = make_agent(tmp_path, provider)
    agent.parts = replace(agent.parts, permissions=AskEverything())  # type: ignore[arg-type]
    events = []
    async for event in agent.run("go"):
        events.append(event)
        if isinstance(event, PermissionRequested):
            await asyncio.sleep(THOUGHT_S)  # the user reading the question: the behaviour under test
            assert agent.is_running
            agent.answer_permission(event.request_id, PermissionAnswer("allow_session"))
    assert [e.content for e in events if isinstance(e, ToolFinished)] == ["slept"]
    assert agent.permissions.session == ("slow",)
    # The user's thought is not counted as the tool's time; a 0 s tool takes far less
    # than the thought even on a loaded machine.
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.duration_ms < THOUGHT_S * 1000


async def test_arguments_that_are_not_json_become_an_error_result(tmp_path: Path) -> None:
    provider = replay([
        {"tool_calls": [{"name": "echo", "id": "c1", "input": '{"text": "unfinish'}], "stop_reason": "max_tokens"},
        {"text": "ok"},
    ])
    events = await collect(make_agent(tmp_path, provider), "go")
    result = provider.requests[1].messages[-1].tool_results_parts[0]
    assert result.is_error and "not valid JSON" in result.content and "unfinish" in result.content
    assert isinstance(events[-1], Finished)


async def test_budget_stops_the_run(tmp_path: Path) -> None:
    from loom_engine.events import BudgetExceeded

    provider = ScriptedProvider(lambda request, i: {"tool_calls": [{"name": "echo", "input": {"text": str(i)}}],
                                                    "usage": {"input_tokens": 100, "output_tokens": 10}})
    agent = Agent(AgentConfig(model="claude-sonnet-4-6", max_budget_usd=0.0001, loop_guard=0),
                  AgentParts(provider=provider, tools=[echo], workspace=Workspace.at(tmp_path)), system_prompt="s")
    events = await collect(agent, "spend")
    assert isinstance(events[-1], BudgetExceeded) and events[-1].cost_usd >= 0.0001
    assert agent.messages[-1].role == "tool"


async def test_session_records_every_message(tmp_path: Path) -> None:
    from loom_engine.sessions.store import SessionStore

    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path, provider="replay", model="test-model")
    provider = replay([{"tool_calls": [{"name": "echo", "input": {"text": "a"}}]}, {"text": "bye"}])
    agent = Agent(AgentConfig(model="test-model"),
                  AgentParts(provider=provider, tools=[echo], workspace=Workspace.at(tmp_path)),
                  session=writer, system_prompt="s")
    await collect(agent, "hello")
    writer.close()
    loaded = store.load(writer.id)
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "assistant"]
    assert loaded.turn_state.turn == 2 and loaded.repaired == ()


async def test_files_changed_on_disk_are_reported_at_the_end_once(tmp_path: Path) -> None:
    @tool(read_only=True)
    async def look(path: str, ctx: ToolContext) -> str:
        """Read a file and remember it."""
        resolved = ctx.resolve(path)
        ctx.state.record_read(resolved)
        return resolved.read_text()

    (tmp_path / "notes.txt").write_text("v1")
    provider = replay([{"tool_calls": [{"name": "look", "input": {"path": "notes.txt"}}]},
                               {"text": "read it"}, {"text": "ok"}, {"text": "ok again"}])
    agent = Agent(AgentConfig(model="m"),
                  AgentParts(provider=provider, tools=[look], workspace=Workspace.at(tmp_path)), system_prompt="s")
    await collect(agent, "read notes")
    (tmp_path / "notes.txt").write_text("version two")
    await collect(agent, "anything new?")
    last = provider.requests[2].messages
    assert last[-1].meta.get("reminder") and "notes.txt" in last[-1].text
    assert last[-2].text == "anything new?"
    # The prefix of the earlier request is unchanged, and the change is reported once.
    assert provider.requests[2].messages[: len(provider.requests[1].messages)] == provider.requests[1].messages
    await collect(agent, "and now?")
    assert not provider.requests[3].messages[-1].meta.get("reminder")


async def test_edit_diffs_are_kept_with_the_results_saved_and_never_sent(tmp_path: Path) -> None:
    from builtin_tools import default_tools
    from loom_engine.sessions.store import SessionStore

    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path, provider="replay", model="test-model")
    provider = replay([
        {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}, "id": "r1"}]},
        {"tool_calls": [{"name": "edit_file", "id": "e1", "input": {
            "path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}]},
        {"text": "fixed"},
    ])
    agent = Agent(AgentConfig(model="test-model"),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)),
                  session=writer, system_prompt="s")
    await collect(agent, "fix add")
    writer.close()
    edit_results = agent.messages[4]
    assert edit_results.role == "tool"
    assert set(edit_results.meta["displays"]) == {"e1"}
    assert "+    return a + b" in edit_results.meta["displays"]["e1"]["diff"]
    assert "displays" not in agent.messages[2].meta  # read_file shows no diff
    loaded = store.load(writer.id)
    assert loaded.messages[4].meta == edit_results.meta
    # Meta is for Loom's UIs only: neither wire format carries it to the model.
    from loom_engine.providers import anthropic_provider, openai_provider

    sent = provider.requests[-1].messages
    assert edit_results in sent
    for wire in (anthropic_provider.to_wire_messages(sent), openai_provider.to_wire_messages("s", sent)):
        assert "displays" not in repr(wire) and "+++ b/calc.py" not in repr(wire)


async def test_a_path_rule_reaches_the_model_with_the_first_read_of_a_matching_file(tmp_path: Path) -> None:
    from builtin_tools import default_tools
    from loom_engine.context.assembler import ContextAssembler

    (tmp_path / ".claude" / "rules").mkdir(parents=True)
    (tmp_path / ".claude" / "rules" / "py.md").write_text('---\npaths: ["**/*.py"]\n---\nPY-RULE: type every def.')
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    provider = replay([
        {"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}, "id": "r0"}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}, "id": "r1"}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}, "id": "r2"}]},
        {"text": "done"},
    ])
    context = ContextAssembler(tmp_path, user_config_dir=tmp_path / "config", cwd=tmp_path)
    agent = Agent(AgentConfig(model="test-model"),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)),
                  context=context)
    await collect(agent, "go")
    system = provider.requests[0].system
    results = [m.tool_results_parts[0].content for m in provider.requests[-1].messages if m.role == "tool"]
    assert "PY-RULE" not in system and "PY-RULE" not in results[0]
    assert "<system-reminder>" in results[1] and "PY-RULE: type every def." in results[1]
    assert "PY-RULE" not in results[2]  # given once
    assert all(request.system == system for request in provider.requests)  # the cached prefix is kept


async def test_an_answer_cut_off_in_a_small_window_names_the_window(tmp_path: Path) -> None:
    """A small local window leaves less room than max_tokens: the request asks for what is
    left, and an answer cut off there says the window, not the setting, stopped it."""
    provider = replay([{"text": "half an answer", "stop_reason": "max_tokens"}])
    agent = make_agent(tmp_path, provider, context_window=8192, max_tokens=8192)
    events = await collect(agent, "word " * 3000)
    (request,) = provider.requests or []
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.cut_off
    assert finished.max_output_tokens == request.max_tokens < 8192
    assert finished.output_limited_by_window
