"""An answer stopped mid-stream was paid for: its tokens count in the run's totals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Aborted, TextDelta, UsageUpdated
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace


async def test_an_aborted_stream_emits_and_counts_its_usage(tmp_path: Path) -> None:
    provider = ScriptedProvider([{"text": "one two three " + "more " * 200, "chunk_size": 4, "delay": 0.01}])
    agent = Agent(AgentConfig(model="claude-sonnet-4-5"),
                  AgentParts(provider=provider, tools=[], workspace=Workspace.at(tmp_path)),
                  system_prompt="You are a test.")
    events: list[Any] = []
    async for event in agent.run("talk"):
        events.append(event)
        if isinstance(event, TextDelta) and "three" in "".join(
                e.text for e in events if isinstance(e, TextDelta)):
            agent.abort()
    assert isinstance(events[-1], Aborted)
    [usage] = [e for e in events if isinstance(e, UsageUpdated)]
    assert usage.usage.input_tokens > 0 and usage.usage.output_tokens > 0
    assert agent.metrics.usage.output_tokens == usage.usage.output_tokens
    assert agent.metrics.llm_calls == 1 and agent.metrics.cost_usd > 0


async def test_a_stream_stopped_before_any_output_is_not_counted(tmp_path: Path) -> None:
    provider = ScriptedProvider([{"text": "late", "delay": 60.0}])  # the abort ends it long before
    agent = Agent(AgentConfig(model="claude-sonnet-4-5"),
                  AgentParts(provider=provider, tools=[], workspace=Workspace.at(tmp_path)),
                  system_prompt="You are a test.")
    import asyncio

    async def stop_soon() -> None:
        await asyncio.sleep(0.2)
        agent.abort()

    stopper = asyncio.create_task(stop_soon())
    events = [event async for event in agent.run("talk")]
    await stopper
    assert isinstance(events[-1], Aborted)
    assert not any(isinstance(e, UsageUpdated) for e in events)
