"""``!command``: the user's own shell command, run at once, and the context it leaves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import (
    PermissionRequested,
    ToolCallStarted,
    ToolFinished,
    ToolProgress,
    TurnStarted,
)
from loom_engine.parts import AgentParts
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.sandbox import Machine, SandboxConfig, open_sandbox
from loom_engine.sessions.store import SessionStore
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.sandbox import failing_bwrap, sysctl_tree


def _agent(root: Path, server: FakeLLMServer, *, deny: tuple[str, ...] = (), session: Any = None,
           messages: Any = ()) -> Agent:
    provider = create_provider("anthropic", api_key="k", base_url=server.anthropic_base_url)
    workspace = Workspace.at(root)
    permissions = PermissionManager(workspace, layers=[RuleLayer("cli", deny=deny)] if deny else [])
    return Agent(AgentConfig(model="claude-haiku-4-5"),
                 AgentParts(provider=provider, tools=default_tools(), workspace=workspace, permissions=permissions),
                 session=session, messages=messages, system_prompt="test")


def _user_texts(request_messages: list[dict[str, Any]]) -> str:
    return "\n".join(block.get("text", "") for m in request_messages if m["role"] == "user"
                     for block in m["content"])


async def test_an_allowed_command_runs_without_a_model_turn_and_its_output_reaches_the_next_request(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    agent = _agent(tmp_path, fake_llm)
    events = [e async for e in agent.run_user_command("echo hi")]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.name, dict(e.input)) for e in started] == [("bash", {"command": "echo hi"})]
    assert any(isinstance(e, ToolProgress) and "hi" in e.text for e in events)
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.content.startswith("hi") and not finished.is_error
    assert not any(isinstance(e, TurnStarted) for e in events)
    assert fake_llm.requests == []  # no model turn

    fake_llm.enqueue(Reply.text("It printed hi."))
    _ = [e async for e in agent.run("what did it print?")]
    sent = _user_texts(fake_llm.last_request.messages)
    assert "$ echo hi\nhi" in sent and "ran this shell command themselves" in sent
    assert sent.rstrip().endswith("what did it print?")


async def test_the_users_own_command_runs_at_once_without_a_question(tmp_path: Path,
                                                                     fake_llm: FakeLLMServer) -> None:
    # `touch` writes: the model's bash call would be asked about; the user's own is not.
    agent = _agent(tmp_path, fake_llm)
    events = [e async for e in agent.run_user_command("touch made.txt")]
    assert not any(isinstance(e, PermissionRequested) for e in events)
    assert (tmp_path / "made.txt").exists()
    assert agent.messages[-1].meta["user_command"]["command"] == "touch made.txt"


async def test_rules_and_hooks_for_the_models_calls_do_not_stand_in_the_users_way(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    (tmp_path / "drop.txt").write_text("x")
    agent = _agent(tmp_path, fake_llm, deny=("bash(rm:*)",))
    events = [e async for e in agent.run_user_command("rm drop.txt")]
    assert not any(isinstance(e, PermissionRequested) for e in events)
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert not finished.is_error
    assert not (tmp_path / "drop.txt").exists()  # as their own shell would have done


async def test_the_users_own_command_runs_outside_the_sandbox(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    # Sandbox mode "on" where no sandbox can start: the model's commands are refused,
    # the user's own runs as their shell would run it.
    machine = Machine(backends=("bubblewrap",), bwrap=failing_bwrap(tmp_path / "bin"),
                      sysctl_root=sysctl_tree(tmp_path / "sys", {"kernel/apparmor_restrict_unprivileged_userns": "1"}))
    root = tmp_path / "ws"
    root.mkdir()
    sandbox = open_sandbox(SandboxConfig(mode="on"), Workspace.at(root), machine=machine)
    assert sandbox.status.refuses_commands
    provider = create_provider("anthropic", api_key="k", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5"),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(root),
                             permissions=PermissionManager(Workspace.at(root)), sandbox=sandbox),
                  system_prompt="test")
    events = [e async for e in agent.run_user_command("echo mine > mine.txt")]
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert not finished.is_error, finished.content
    assert (root / "mine.txt").read_text() == "mine\n"


async def test_an_abort_stops_the_command_and_keeps_what_it_printed(tmp_path: Path,
                                                                   fake_llm: FakeLLMServer) -> None:
    agent = _agent(tmp_path, fake_llm)
    async for event in agent.run_user_command("echo started; sleep 30"):
        if isinstance(event, PermissionRequested):
            agent.answer_permission(event.request_id, PermissionAnswer("allow_once"))
        if isinstance(event, ToolProgress) and "started" in event.text:
            asyncio.get_running_loop().call_soon(agent.abort)
    recorded = agent.messages[-1].meta["user_command"]
    assert "started" in recorded["output"] and "Aborted" in recorded["output"]


async def test_the_session_keeps_the_command_and_a_resume_does_not_take_it_for_an_unanswered_prompt(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path, provider="anthropic", model="claude-haiku-4-5")
    agent = _agent(tmp_path, fake_llm, session=writer)
    _ = [e async for e in agent.run_user_command("echo kept")]
    writer.close()

    loaded = store.load(writer.id)
    assert loaded.repaired == ()  # no "the previous turn was cut off" note
    assert loaded.messages[-1].meta["user_command"]["command"] == "echo kept"
    resumed = _agent(tmp_path, fake_llm, messages=loaded.messages)
    fake_llm.enqueue(Reply.text("ok"))
    _ = [e async for e in resumed.run("and now?")]
    assert "$ echo kept\nkept" in _user_texts(fake_llm.last_request.messages)
