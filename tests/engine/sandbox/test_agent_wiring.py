"""Agent(sandbox=...): the agent's bash calls, a sub-agent's, and the hooks all use it."""

from __future__ import annotations

from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import ToolFinished
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import real_path, real_sandbox


async def test_a_sub_agents_commands_run_in_the_parents_sandbox(tmp_path: Path) -> None:
    root = real_path(tmp_path) / "ws"
    root.mkdir()
    outside = real_path(tmp_path) / "outside"
    outside.mkdir()
    workspace = Workspace.at(root)
    sandbox = real_sandbox(workspace, "bubblewrap")
    bash = {"name": "bash", "input": {"command": f"touch child-was-here; touch {outside}/escaped"}}
    task = {"name": "task", "input": {"description": "try it", "prompt": "run it", "tools": ["bash"]}}
    provider = ScriptedProvider([{"tool_calls": [task]}, {"tool_calls": [bash]}, {"text": "child done"},
                                 {"text": "parent done"}])
    agent = Agent(AgentConfig(model="test-model", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=workspace,
                             permissions=PermissionManager(workspace, mode="bypass"), sandbox=sandbox),
                  system_prompt="test")
    finished = [e async for e in agent.run("go") if isinstance(e, ToolFinished)]
    child_bash = next(e for e in finished if e.name == "bash")
    assert child_bash.depth == 1
    assert (root / "child-was-here").exists() and not (outside / "escaped").exists(), child_bash.content
    assert agent._hook_engine.sandbox is sandbox
