"""What a run without a user does with a call it would ask about: the model reads a
denial, the user a notice naming the call and how to allow it, and the file is not
written. (The decision itself is table-tested in test_authorize.py; this is the I/O.)"""

from __future__ import annotations

from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Notice, PermissionRequested, ToolFinished
from loom_engine.parts import AgentParts
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace


async def test_a_headless_run_denies_an_ask_and_says_how_to_allow_it(tmp_path: Path) -> None:
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "hi\n"}}]},
        {"text": "done"},
    ])
    workspace = Workspace.at(tmp_path)
    agent = Agent(AgentConfig(model="test-model", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=workspace,
                             permissions=PermissionManager(workspace, mode="default")),
                  system_prompt="You are a test.")
    notices: list[str] = []
    finished: list[ToolFinished] = []
    async for event in agent.run("go"):
        assert not isinstance(event, PermissionRequested)
        if isinstance(event, Notice):
            notices.append(event.message)
        elif isinstance(event, ToolFinished):
            finished.append(event)
    assert len(finished) == 1 and finished[0].is_error and finished[0].denied  # loom run's permission_denials
    assert finished[0].content.startswith("Refused: this is a non-interactive run and ")
    assert finished[0].content.endswith("say what was not permitted.")
    assert ('refused write_file ("notes.txt") (not run): default mode: writing notes.txt needs approval; allow it with '
            "--permission-mode accept-edits or --allow 'write_file(./notes.txt)'") in notices
    assert not (tmp_path / "notes.txt").exists()


async def test_a_failing_call_is_not_a_denial(tmp_path: Path) -> None:
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "read_file", "input": {"path": "missing.txt"}},
                        {"name": "write_file", "input": {"path": "secret.txt", "content": "x"}}]},
        {"text": "done"},
    ])
    workspace = Workspace.at(tmp_path)
    permissions = PermissionManager(workspace, mode="bypass",
                                    layers=[RuleLayer("test", deny=("write_file(secret.txt)",))])
    agent = Agent(AgentConfig(model="test-model", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=workspace, permissions=permissions),
                  system_prompt="You are a test.")
    finished = {event.name: event async for event in agent.run("go") if isinstance(event, ToolFinished)}
    assert finished["read_file"].is_error and not finished["read_file"].denied
    assert finished["write_file"].is_error and finished["write_file"].denied
