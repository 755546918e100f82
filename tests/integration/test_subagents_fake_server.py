"""Sub-agents against the fake server: two task calls really overlap; abort ends both."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Aborted, Finished
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply


def _parent(workspace: Path, server: FakeLLMServer) -> Agent:
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    return Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                 AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(workspace)),
                 system_prompt="parent")


def _two_tasks() -> Reply:
    return Reply.tools(("task", {"description": "find greet", "prompt": "Where is greet defined?"}),
                       ("task", {"description": "read readme", "prompt": "What does README.md say?"}))


async def test_child_requests_interleave(workspace: Path, fake_llm: FakeLLMServer) -> None:
    first, gate_1 = Reply.text("greet is in src/app.py").held()
    second, gate_2 = Reply.text("README says: a small project").held()
    fake_llm.enqueue(_two_tasks(), first, second, Reply.text("both answered"))
    parent = _parent(workspace, fake_llm)
    run = asyncio.create_task(_collect(parent))
    # Both children reach the server while neither has been answered: they run together.
    arrived = await asyncio.to_thread(fake_llm.wait_for_requests, 3, 10.0)
    gate_1.set()
    gate_2.set()
    events = await asyncio.wait_for(run, 20)
    assert arrived, "the second child did not start before the first one finished"
    assert isinstance(events[-1], Finished) and events[-1].result == "both answered"
    children = fake_llm.requests[1:3]
    prompts = sorted(r.body["messages"][0]["content"][0]["text"] for r in children)
    assert prompts == ["What does README.md say?", "Where is greet defined?"]
    for child in children:
        assert sorted(t["name"] for t in child.body["tools"]) == ["glob", "grep", "ls", "read_file"]
    final = json.dumps(fake_llm.requests[3].body["messages"][-1])
    assert "greet is in src/app.py" in final and "a small project" in final
    task_ids = {call.id for call in parent.messages[1].tool_uses}
    assert {e.parent_tool_use_id for e in events if e.depth == 1} == task_ids


async def test_abort_during_children_leaves_none_running(workspace: Path, fake_llm: FakeLLMServer) -> None:
    first, gate_1 = Reply.text("never").held()
    second, gate_2 = Reply.text("never").held()
    fake_llm.enqueue(_two_tasks(), first, second)
    parent = _parent(workspace, fake_llm)
    run = asyncio.create_task(_collect(parent))
    assert await asyncio.to_thread(fake_llm.wait_for_requests, 3, 10.0)
    parent.abort()
    events = await asyncio.wait_for(run, 30)  # a bound on a hang, not a timing
    gate_1.set()
    gate_2.set()
    assert isinstance(events[-1], Aborted)
    # Both child streams were closed by the client.
    assert await asyncio.to_thread(fake_llm.wait_for_disconnects, 2)
    results = parent.messages[2].tool_results_parts
    assert len(results) == 2 and all(r.is_error for r in results)


async def _collect(agent: Agent) -> list:
    return [e async for e in agent.run("research")]
