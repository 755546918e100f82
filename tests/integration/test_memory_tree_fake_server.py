"""Three sub-agents started in one message write the tree's shared memory through the
real ``memory`` tool at the same time: every finding lands, the parent reads them all,
and no child's local notes reach the parent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Finished
from loom_engine.memory.tree import TreeMemory
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

memory_tool = pytest.importorskip("builtin_tools.memory")

CHILDREN = 3


def _child_writes(n: int) -> Reply:
    """One child's first answer: a local scratch note and a shared finding, together."""
    return Reply.tools(
        ("memory", {"command": "create", "path": "/memories/scratch.md", "file_text": f"scratch of child {n}",
                    "scope": "local"}),
        ("memory", {"command": "create", "path": f"/memories/findings/{n}.md", "file_text": f"finding {n}",
                    "scope": "shared"}))


async def test_parallel_children_write_shared_memory_and_keep_local_to_themselves(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    tasks = Reply.tools(*(("task", {"description": f"look {n}", "prompt": f"look {n}", "tools": ["memory"]})
                          for n in range(CHILDREN)))
    held = [_child_writes(n).held() for n in range(CHILDREN)]
    fake_llm.enqueue(tasks, *(reply for reply, _ in held), *(Reply.text(f"done {n}") for n in range(CHILDREN)),
                     Reply.tool("memory", {"command": "view", "path": "/memories", "scope": "shared"}),
                     Reply.text("all findings read"))
    tools = default_tools()
    if "memory" not in {tool.name for tool in tools}:
        tools.append(memory_tool.MemoryTool())
    memory = TreeMemory.start()
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    parent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                   AgentParts(provider=provider, tools=tools, workspace=Workspace.at(workspace)),
                   system_prompt="parent", tree_memory=memory)
    run = asyncio.create_task(_collect(parent))
    # Every child has asked for its first answer before any is given: their writes overlap.
    arrived = await asyncio.to_thread(fake_llm.wait_for_requests, 1 + CHILDREN, 10.0)
    for _, gate in held:
        gate.set()
    events = await asyncio.wait_for(run, 30)  # a bound on a hang, not a timing
    assert arrived, "the children did not run at the same time"
    assert isinstance(events[-1], Finished) and events[-1].result == "all findings read"

    assert {e.path: e.content for e in memory.shared.list()} == {
        f"findings/{n}.md": f"finding {n}" for n in range(CHILDREN)}
    assert memory.local.list() == []  # the parent's own notes: none written
    view = json.dumps(fake_llm.requests[-1].body["messages"][-1])
    assert all(f"findings/{n}.md" in view for n in range(CHILDREN))
    # Each child's scratch note stayed its own: the same path in three local scopes never
    # collided, and none of it reached the parent.
    # (the children's second requests, which carry their two writes' results)
    child_results = [json.dumps(r.body["messages"][-1]) for r in fake_llm.requests[1 + CHILDREN:1 + 2 * CHILDREN]]
    assert sum("scratch.md" in text for text in child_results) == CHILDREN
    assert not any("is_error\": true" in text for text in child_results)
    parent_side = json.dumps([r.body["messages"] for r in fake_llm.requests[-2:]])
    assert "scratch of child" not in parent_side


async def _collect(agent: Agent) -> list:
    return [e async for e in agent.run("research")]
