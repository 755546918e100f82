"""Auto-compaction through the real Anthropic provider against the strict fake server."""

from __future__ import annotations

import json
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import CompactionApplied, Finished
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.tools.base import Tool
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

SECTIONS = ["Background context", "Key decisions", "Tool usage", "User intent evolution",
            "Execution results", "Errors and solutions", "Open issues", "Next steps"]


def only_read_file() -> list[Tool]:
    return [tool for tool in default_tools() if tool.name == "read_file"]


SUMMARY = "\n".join(f"## {name}\n- point about {name.lower()}" for name in SECTIONS)


async def test_session_past_the_threshold_compacts_and_continues(workspace: Path, fake_llm: FakeLLMServer) -> None:
    for k in range(4):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(150)))
    # A 16k window compacts at 8k: after the fourth read, before the fifth request. Only
    # the read tool is offered, so the arithmetic does not move as Loom gains tools.
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(4)],
                     Reply.text(SUMMARY), Reply.text("finished after compaction"))
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", context_window=16_000, compact_threshold=0.5,
                                     interactive=False),
                  AgentParts(provider=provider, tools=only_read_file(), workspace=Workspace.at(workspace)),
                  system_prompt="You are a test.")
    events = [e async for e in agent.run("summarise the files")]
    assert isinstance(events[-1], Finished) and events[-1].result == "finished after compaction"
    compactions = [e for e in events if isinstance(e, CompactionApplied)]
    assert len(compactions) == 1 and compactions[0].tokens_after < compactions[0].tokens_before
    assert compactions[0].method == "summary"
    bodies = [r.body for r in fake_llm.requests]
    assert len(bodies) == 6 and not bodies[4].get("tools")
    assert all(name in json.dumps(bodies[4]) for name in SECTIONS)
    after, last_before = bodies[5], bodies[3]
    assert len(json.dumps(after["messages"])) < len(json.dumps(last_before["messages"]))
    assert "point about key decisions" in json.dumps(after["messages"])
    # The kept history is valid for the strict server on the next run too.
    fake_llm.enqueue(Reply.text("still fine"))
    events = [e async for e in agent.run("and?")]
    assert isinstance(events[-1], Finished) and events[-1].result == "still fine"


async def test_context_length_rejection_compacts_once_and_retries(workspace: Path, fake_llm: FakeLLMServer) -> None:
    for k in range(3):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(80)))
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(3)],
                     Reply.prompt_too_long(), Reply.text(SUMMARY), Reply.text("answered after the retry"))
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(workspace)),
                  system_prompt="You are a test.")
    events = [e async for e in agent.run("read them all")]
    assert isinstance(events[-1], Finished) and events[-1].result == "answered after the retry"
    compactions = [e for e in events if isinstance(e, CompactionApplied)]
    assert len(compactions) == 1 and compactions[0].reason == "context_length"
    assert len(fake_llm.requests) == 6


async def test_manual_compact_with_focus(workspace: Path, fake_llm: FakeLLMServer) -> None:
    for k in range(3):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(80)))
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(3)], Reply.text("read"),
                     Reply.text(SUMMARY))
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(workspace)),
                  system_prompt="You are a test.")
    [e async for e in agent.run("read them all")]
    before = len(agent.messages)
    events = [e async for e in agent.compact(focus="the w1 file")]
    assert [e.type for e in events if isinstance(e, CompactionApplied)] == ["compacted"]
    assert len(agent.messages) < before
    assert "the w1 file" in json.dumps(fake_llm.requests[-1].body)
