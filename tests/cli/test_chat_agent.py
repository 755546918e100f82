"""The ChatAgent Protocol: the engine's Agent and the test double both satisfy it.

mypy checks this module (pyproject's ``[tool.mypy] files``): the typed assignments below
fail the type check when ``Agent`` or ``ReplayAgent`` lacks a member the chat calls or
has one with another signature. At run time the tests drive both through the shared
start-a-turn path, so the Protocol's members are the ones that are really called.
"""

from __future__ import annotations

from pathlib import Path

from builtin_tools import default_tools
from loom_cli.chat_agent import ChatAgent
from loom_cli.turns import session_hook_failures, start_turn
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import AgentEvent, Finished, HookRan, TextDelta, is_event
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace
from tests.doubles.replay_agent import ReplayAgent


def _real_agent(workspace: Path) -> Agent:
    parts = AgentParts(provider=ScriptedProvider([{"text": "the real answer"}]), tools=default_tools(),
                       workspace=Workspace.at(workspace))
    return Agent(AgentConfig(model="scripted", provider="scripted", context_window=200_000), parts,
                 system_prompt="You are a test assistant.")


async def _events(agent: ChatAgent, text: str) -> list[AgentEvent]:
    return [event async for event in start_turn(agent, text)]


async def test_a_real_agent_is_a_chat_agent(tmp_path: Path) -> None:
    agent: ChatAgent = _real_agent(tmp_path)
    events = await _events(agent, "hello")
    assert all(is_event(event) for event in events)
    assert any(isinstance(event, TextDelta) for event in events)
    assert isinstance(events[-1], Finished) and events[-1].result == "the real answer"
    assert [m.text for m in agent.messages] == ["hello", "the real answer"]
    assert agent.mcp is None and not agent.hooks
    await agent.aclose()


async def test_the_replay_agent_is_a_chat_agent(tmp_path: Path) -> None:
    replay = ReplayAgent([TextDelta(text="scripted"), Finished(result="scripted", num_turns=1)], workspace=tmp_path)
    agent: ChatAgent = replay
    events = await _events(agent, "see @missing.txt")  # the mention path: attach, no MCP servers
    assert [type(event) for event in events] == [TextDelta, Finished]
    assert replay.prompts == ["see @missing.txt"]
    assert not agent.is_running
    await agent.aclose()
    assert replay.closed


async def test_session_hook_failures_are_the_hooks_that_did_not_succeed(tmp_path: Path) -> None:
    failed = HookRan(event="SessionStart", command="./start.sh", source=".loom/settings.toml", outcome="error",
                     duration_ms=5.0, message="exit 1")
    quiet = HookRan(event="SessionStart", command="true", source=".loom/settings.toml", outcome="ok", duration_ms=1.0)

    class StartHooks(ReplayAgent):
        async def session_started(self, source: str) -> tuple[AgentEvent, ...]:
            return (quiet, failed, TextDelta(text="not a hook"))

    agent: ChatAgent = StartHooks(workspace=tmp_path)
    assert await session_hook_failures(agent, "session_started", "startup") == (failed,)
    assert await session_hook_failures(agent, "session_ended", "other") == ()
