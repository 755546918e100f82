"""Sub-agents through the task tool: parallel children, tagged events, abort, budgets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.context.prompts import SUBAGENT_INSTRUCTIONS
from loom_engine.events import Aborted, Finished
from loom_engine.messages import Message, TextPart, ToolUsePart
from loom_engine.parts import AgentParts
from loom_engine.providers.base import ProviderRequest, StreamCompleted, StreamText
from loom_engine.usage import Usage
from loom_engine.workspace import Workspace


class ParentAndChildren:
    """The parent asks for two tasks; each child must meet the other before answering,
    which only happens if they really run at the same time."""

    name = "double"

    def __init__(self, child_delay: float = 0.0) -> None:
        self.barrier = asyncio.Barrier(2)
        self.child_requests: list[ProviderRequest] = []
        self.parent_requests: list[ProviderRequest] = []
        self.child_delay = child_delay
        self.children_running = 0

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        if request.system == SUBAGENT_INSTRUCTIONS:
            self.child_requests.append(request)
            self.children_running += 1
            try:
                await asyncio.wait_for(self.barrier.wait(), 30)  # both children arrive; a bound
                await asyncio.sleep(self.child_delay)
            finally:
                self.children_running -= 1
            topic = request.messages[0].text
            yield StreamText(f"child answer about {topic}")
            yield StreamCompleted(Message.assistant(TextPart(f"child answer about {topic}")), "end_turn",
                                  Usage(50, 5))
            return
        self.parent_requests.append(request)
        if len(self.parent_requests) == 1:
            calls = [ToolUsePart(f"t{i}", "task", {"description": f"look {i}", "prompt": f"topic {i}"})
                     for i in (1, 2)]
            yield StreamCompleted(Message.assistant(*calls), "tool_use", Usage(100, 10))
        else:
            yield StreamCompleted(Message.assistant(TextPart("parent done")), "end_turn", Usage(100, 10))


def make_parent(tmp_path: Path, provider: Any) -> Agent:
    return Agent(AgentConfig(model="m"),
                 AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)),
                 system_prompt="parent")


async def test_two_tasks_run_in_parallel_and_only_answers_return(tmp_path: Path) -> None:
    provider = ParentAndChildren()
    parent = make_parent(tmp_path, provider)
    events = [e async for e in parent.run("research")]
    assert isinstance(events[-1], Finished) and events[-1].result == "parent done"
    assert len(provider.child_requests) == 2
    # Children see only their own prompt, and only read-only tools.
    for request in provider.child_requests:
        assert len(request.messages) == 1
        assert {t.name for t in request.tools} == {"read_file", "glob", "grep", "ls"}
    results = provider.parent_requests[1].messages[-1].tool_results_parts
    assert results[0].content.startswith("child answer about topic 1")
    assert results[1].content.startswith("child answer about topic 2")
    assert "sub-agent 'look 1'" in results[0].content
    child_events = [e for e in events if e.depth == 1]
    assert {e.parent_tool_use_id for e in child_events} == {"t1", "t2"}
    # Child usage counts in the parent's totals: 2 parent calls + 2 child calls.
    assert parent.metrics.llm_calls == 4
    assert parent.metrics.usage.input_tokens == 300


async def test_abort_reaches_every_child(tmp_path: Path) -> None:
    provider = ParentAndChildren(child_delay=30)
    parent = make_parent(tmp_path, provider)

    async def abort_when_children_run() -> None:
        while provider.children_running < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        parent.abort()

    aborter = asyncio.create_task(abort_when_children_run())
    events = await asyncio.wait_for(_collect(parent), 30)  # a bound on a hang
    await aborter
    assert isinstance(events[-1], Aborted)
    assert provider.children_running == 0
    tool_results = parent.messages[2].tool_results_parts
    assert all(r.is_error for r in tool_results)


async def test_depth_limit(tmp_path: Path) -> None:
    config = AgentConfig(model="m", depth=2, max_depth=2)
    agent = Agent(config,
                  AgentParts(provider=ParentAndChildren(), tools=default_tools(), workspace=Workspace.at(tmp_path)),
                  system_prompt="deep")
    output = await agent.run_subagent(description="d", prompt="p", tools=None, parent_call_id="c",
                                      cancel=agent.bus.cancel_token, emit=lambda e: None)
    assert output.is_error and "at most 2 deep" in output.content


def test_inherit_never_widens() -> None:
    parent = AgentConfig(model="m", tool_names=("read_file", "grep", "bash"))
    child = parent.inherit(tools=("read_file", "bash", "write_file"))
    assert child.tool_names == ("read_file", "bash") and child.depth == 1
    assert parent.inherit().tool_names == ("read_file", "grep")
    assert parent.inherit(remove_tools=("grep",)).tool_names == ("read_file",)


async def _collect(agent: Agent) -> list[Any]:
    return [e async for e in agent.run("research")]


def test_skill_names_restrict_the_catalog(tmp_path: Path) -> None:
    from loom_engine.skills.catalog import SkillCatalog

    for name in ("alpha", "beta"):
        folder = tmp_path / ".loom" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\nbody\n")
    catalog = SkillCatalog.discover(tmp_path, user_config_dir=tmp_path / "u", builtin_dir=tmp_path / "b")
    config = AgentConfig(model="m").inherit(add_skills=("beta",))
    agent = Agent(config,
                  AgentParts(provider=ParentAndChildren(), tools=default_tools(), workspace=Workspace.at(tmp_path),
                             skills=catalog), system_prompt="child")
    assert [s.name for s in agent.skills] == ["beta"]


async def test_a_sub_agent_answer_cut_off_by_the_output_limit_is_marked_incomplete(tmp_path: Path) -> None:
    from loom_engine.providers.scripted import ScriptedProvider

    provider = ScriptedProvider([
        {"tool_calls": [{"name": "task", "input": {"description": "look", "prompt": "write a lot"}}]},
        {"text": "the first half", "stop_reason": "max_tokens"},  # the sub-agent's answer
        {"text": "Noted."},
    ])
    parent = Agent(AgentConfig(model="scripted", interactive=False),
                   AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)))
    events = [e async for e in parent.run("delegate")]
    assert isinstance(events[-1], Finished) and not events[-1].cut_off
    [result] = [p for m in parent.messages if m.role == "tool" for p in m.parts]
    assert "the first half" in result.content  # type: ignore[union-attr]
    assert "cut off at its output limit: it is incomplete" in result.content  # type: ignore[union-attr]
