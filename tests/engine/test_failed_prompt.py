"""A prompt whose request failed before any answer is taken back, not merged into the next one."""

from __future__ import annotations

from pathlib import Path

from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Error, Finished
from loom_engine.parts import AgentParts
from loom_engine.sessions.store import SessionStore
from loom_engine.workspace import Workspace
from tests.engine.test_agent import collect, echo, make_agent, replay


async def test_the_next_request_carries_only_the_next_prompt(tmp_path: Path) -> None:
    provider = replay([{"error": {"kind": "auth", "message": "invalid x-api-key"}}, {"text": "Hi there"}])
    agent = make_agent(tmp_path, provider)
    events = await collect(agent, "fix the login bug")
    assert isinstance(events[-1], Error)
    events = await collect(agent, "hello")
    assert isinstance(events[-1], Finished)
    sent = provider.requests[-1].messages
    assert [m.text for m in sent if m.role == "user"] == ["hello"]
    assert "fix the login bug" not in str([m.to_dict() for m in sent])


async def test_the_failed_prompt_is_handed_back_once(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, replay([{"error": {"kind": "auth", "message": "invalid x-api-key"}}]))
    await collect(agent, "fix the login bug")
    unsent = agent.take_unsent_prompt()
    assert unsent is not None and unsent.text == "fix the login bug" and unsent.error.kind == "auth"
    assert agent.take_unsent_prompt() is None


async def test_the_session_does_not_keep_the_failed_prompt(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path, provider="replay", model="test-model")
    provider = replay([{"text": "first answer"}, {"error": {"kind": "overloaded", "message": "Overloaded"}}])
    agent = Agent(AgentConfig(model="test-model"),
                  AgentParts(provider=provider, tools=[echo], workspace=Workspace.at(tmp_path)),
                  session=writer, system_prompt="s")
    await collect(agent, "one")
    await collect(agent, "two")
    writer.close()
    loaded = store.load(writer.id)
    assert [(m.role, m.text) for m in loaded.messages] == [("user", "one"), ("assistant", "first answer")]


async def test_a_prompt_the_model_already_acted_on_stays(tmp_path: Path) -> None:
    provider = replay([{"tool_calls": [{"name": "echo", "input": {"text": "a"}}]},
                       {"error": {"kind": "overloaded", "message": "Overloaded"}}])
    agent = make_agent(tmp_path, provider)
    await collect(agent, "go")
    assert agent.take_unsent_prompt() is None
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool"]
