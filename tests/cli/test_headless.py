"""run_headless in-process: output formats from real engine events, and the provider's
connections closed on the event loop that opened them."""

from __future__ import annotations

import io
import json
from pathlib import Path

from loom_cli.headless import EXIT_ERROR, EXIT_OK, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply


def _agent(tmp_path: Path, server: FakeLLMServer) -> tuple[Agent, list[str]]:
    """An agent on the fake server, and a log of its provider's aclose calls."""
    provider = create_provider("anthropic", api_key="k", base_url=server.anthropic_base_url)
    closed: list[str] = []
    original = provider.aclose

    async def aclose() -> None:
        closed.append("closed")
        await original()

    provider.aclose = aclose  # type: ignore[method-assign]
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=[], workspace=Workspace.at(tmp_path)))
    return agent, closed


async def test_the_answer_is_printed_and_the_connections_closed(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("All good."))
    agent, closed = _agent(tmp_path, fake_llm)
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(agent, "hi", "json", out, err) == EXIT_OK
    assert json.loads(out.getvalue())["result"] == "All good."
    assert closed == ["closed"]  # on this loop, not left to the garbage collector


async def test_connections_are_closed_after_a_failed_run_too(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.error(401))
    agent, closed = _agent(tmp_path, fake_llm)
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(agent, "hi", "text", out, err) == EXIT_ERROR
    assert "rejected the API key" in err.getvalue()
    assert closed == ["closed"]


async def test_num_turns_counts_the_top_level_agent_only(tmp_path: Path) -> None:
    """A parent of 2 turns whose sub-agent takes 2 turns reports 2, not 4."""
    from builtin_tools import default_tools
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
    assert await run_headless(agent, "what is here?", "json", out, err) == EXIT_OK, err.getvalue()
    result = json.loads(out.getvalue())
    assert result["result"] == "There is one note."
    assert result["num_turns"] == 2
