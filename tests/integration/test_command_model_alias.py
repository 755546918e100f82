"""A custom command's ``model:`` takes Claude Code's short names (sonnet, opus, haiku),
as a custom sub-agent's does: the request names the full model."""

from __future__ import annotations

from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.commands.catalog import CommandCatalog
from loom_engine.commands.invoke import resolve, run_invocation
from loom_engine.config import AgentConfig
from loom_engine.events import Notice
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

BUILTINS = ("help", "clear", "model")


async def test_quick_with_model_haiku_sends_the_full_model_name(workspace: Path, fake_llm: FakeLLMServer) -> None:
    command = workspace / ".loom" / "commands" / "quick.md"
    command.parent.mkdir(parents=True)
    command.write_text("---\nmodel: haiku\n---\nAnswer quickly.\n")
    fake_llm.enqueue(Reply.text("quick"), Reply.text("normal"))
    workspace_ = Workspace.at(workspace)
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-sonnet-4-6", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=workspace_,
                             permissions=PermissionManager(workspace_)))
    commands = CommandCatalog.discover(workspace, user_config_dir=workspace / "no-config", reserved=BUILTINS)
    invocation = resolve("/quick", commands, None, BUILTINS)
    assert invocation is not None

    events = [event async for event in run_invocation(agent, invocation)]
    _ = [event async for event in agent.run("and now?")]

    assert [r.body["model"] for r in fake_llm.requests] == ["claude-haiku-4-5", "claude-sonnet-4-6"]
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert "/quick uses claude-haiku-4-5 for this turn" in notices
