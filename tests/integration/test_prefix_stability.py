"""Prompt-cache friendliness: each request starts with the previous one, byte for byte."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Finished
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply, without_cache_control


async def test_ten_turns_keep_the_prefix(workspace: Path, fake_llm: FakeLLMServer) -> None:
    for i in range(9):
        fake_llm.enqueue(Reply.tool("read_file", {"path": "src/app.py"}) if i % 2 else
                         Reply.tool("glob", {"pattern": "**/*.py"}))
    fake_llm.enqueue(Reply.text("done"))
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-sonnet-4-6", interactive=False, loop_guard=0),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(workspace)))
    events = [e async for e in agent.run("look around")]
    assert isinstance(events[-1], Finished)
    bodies = [r.body for r in fake_llm.requests]
    assert len(bodies) == 10
    for before, after in itertools.pairwise(bodies):
        assert json.dumps(before["tools"]) == json.dumps(after["tools"])
        assert json.dumps(before["system"]) == json.dumps(after["system"])
        old = without_cache_control(before["messages"])
        new = without_cache_control(after["messages"])
        assert json.dumps(new[: len(old)]) == json.dumps(old)
    for body in bodies:
        marks = json.dumps(body).count('"cache_control"')
        assert 1 <= marks <= 4
        assert "cache_control" in json.dumps(body["tools"][-1])
        assert "cache_control" in json.dumps(body["system"])
        assert "cache_control" in json.dumps(body["messages"][-1]["content"][-1])
