"""Issue 19 §1: running one command outside the sandbox, through a real agent.

``dangerously_disable_sandbox`` always asks the user — in every permission mode,
bypass included, whatever a hook answers — and the question says that it runs
outside and why. A run without a user refuses it unless an allow rule the user wrote
covers the command. Each case checks the host: the command's write outside the
workspace happened only when it was allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import PermissionRequested, ToolFinished
from loom_engine.hooks.config import HookCommand, HookSet
from loom_engine.parts import AgentParts
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.modes import PermissionMode
from loom_engine.permissions.targets import CommandRun, Confinement
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.sandbox import Sandbox
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import real_sandbox

WHY = "npm install writes ~/.npm, which the sandbox keeps read-only"


def _agent(root: Path, command: str, *, mode: PermissionMode = "default", allow: tuple[str, ...] = (),
           interactive: bool = True, hooks: HookSet | None = None, sandbox: Sandbox | None = None) -> Agent:
    call = {"name": "bash", "input": {"command": command, "description": WHY, "dangerously_disable_sandbox": True}}
    workspace = Workspace.at(root)
    permissions = PermissionManager(workspace, mode=mode, layers=[RuleLayer("cli", allow=allow)] if allow else [])
    return Agent(AgentConfig(model="test-model", interactive=interactive),
                 AgentParts(provider=ScriptedProvider([{"tool_calls": [call]}, {"text": "done"}]),
                            tools=default_tools(), workspace=workspace, permissions=permissions,
                            hooks=hooks or HookSet(), sandbox=sandbox or real_sandbox(workspace, "bubblewrap")),
                 system_prompt="test")


async def _play(agent: Agent, answer: str) -> tuple[list[PermissionRequested], ToolFinished]:
    asked: list[PermissionRequested] = []
    finished: list[ToolFinished] = []
    async for event in agent.run("go"):
        if isinstance(event, PermissionRequested):
            asked.append(event)
            agent.answer_permission(event.request_id, PermissionAnswer(answer))  # type: ignore[arg-type]
        elif isinstance(event, ToolFinished):
            finished.append(event)
    return asked, finished[-1]


@pytest.mark.parametrize("mode", ["default", "accept-edits", "bypass"])
async def test_running_outside_always_asks_and_says_why(lab: tuple[Path, Path], mode: PermissionMode) -> None:
    root, outside = lab
    agent = _agent(root, f"touch {outside}/ran", mode=mode, allow=("bash",))
    asked, finished = await _play(agent, "deny")
    [question] = asked
    assert "OUTSIDE the sandbox" in question.reason and WHY in question.reason
    assert question.preview is not None and question.preview["outside_sandbox"] is True
    assert finished.is_error and not (outside / "ran").exists()
    allowed = _agent(root, f"touch {outside}/ran", mode=mode, allow=("bash",))
    asked, finished = await _play(allowed, "allow_once")
    assert len(asked) == 1 and not finished.is_error and (outside / "ran").exists()


async def test_a_hook_cannot_answer_for_the_user(lab: tuple[Path, Path]) -> None:
    root, outside = lab
    answer = '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'
    hooks = HookSet((HookCommand("PreToolUse", "Bash", f"echo '{answer}'"),
                     HookCommand("PermissionRequest", "Bash",
                                 "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\", "
                                 "\"decision\": {\"behavior\": \"allow\"}}}'")))
    agent = _agent(root, f"touch {outside}/ran", hooks=hooks)
    asked, finished = await _play(agent, "deny")
    assert len(asked) == 1 and finished.is_error and not (outside / "ran").exists()


async def test_headless_refuses_it_without_an_allow_rule(lab: tuple[Path, Path]) -> None:
    root, outside = lab
    for mode in ("default", "accept-edits", "bypass"):
        agent = _agent(root, f"touch {outside}/ran", mode=mode, interactive=False)  # type: ignore[arg-type]
        asked, finished = await _play(agent, "allow_once")
        assert asked == [] and finished.is_error and "non-interactive" in finished.content
        assert not (outside / "ran").exists()


async def test_headless_runs_it_when_an_allow_rule_covers_the_command(lab: tuple[Path, Path]) -> None:
    root, outside = lab
    agent = _agent(root, f"touch {outside}/ran", interactive=False, allow=("bash(touch:*)",))
    asked, finished = await _play(agent, "deny")
    assert asked == [] and not finished.is_error and (outside / "ran").exists()
    partly = _agent(root, f"touch {outside}/second && rm -f {outside}/ran", interactive=False,
                    allow=("bash(touch:*)",))
    _, finished = await _play(partly, "deny")
    assert finished.is_error and (outside / "ran").exists() and not (outside / "second").exists()


def _check(root: Path, command: str, mode: PermissionMode, *, network: str = "off", auto: bool = True,
           confined: bool = True, deny: tuple[str, ...] = (), ask: tuple[str, ...] = (), escalation: str | None = None
           ) -> str:
    manager = PermissionManager(Workspace.at(root), mode=mode, layers=[RuleLayer("cli", deny=deny, ask=ask)])
    target = CommandRun(command, str(root), Confinement(network, auto) if confined else None, escalation)
    return manager.check("bash", target, is_read_only=False).behavior


def test_a_deny_rule_stays_a_deny_outside_too(lab: tuple[Path, Path]) -> None:
    root, _ = lab
    assert _check(root, "rm -rf build", "bypass", deny=("bash(rm:*)",), escalation=WHY) == "deny"
    assert _check(root, "cat README.md", "plan", escalation=WHY) == "ask"
    assert _check(root, "make", "plan", escalation=WHY) == "deny"


def test_accept_edits_runs_confined_commands_unasked(lab: tuple[Path, Path]) -> None:
    root, _ = lab
    for command in ("npm test", "make -j4", "python3 setup.py build", "rm -rf build", "eval \"$CMD\"",
                    "cat ~/.ssh/id_rsa", "for f in *; do rm $f; done"):
        assert _check(root, command, "accept-edits") == "allow", command
        assert _check(root, command, "accept-edits", confined=False) == "ask", command
        assert _check(root, command, "default") == "ask", command
        assert _check(root, command, "accept-edits", network="on") == "ask", command
        assert _check(root, command, "accept-edits", auto=False) == "ask", command
        assert _check(root, command, "accept-edits", escalation=WHY) == "ask", command


def test_rules_still_catch_confined_commands(lab: tuple[Path, Path]) -> None:
    root, _ = lab
    assert _check(root, "git push origin main", "accept-edits", ask=("bash(git push:*)",)) == "ask"
    assert _check(root, "npm test && git push", "accept-edits", ask=("bash(git push:*)",)) == "ask"
    assert _check(root, "rm -rf build", "accept-edits", deny=("bash(rm:*)",)) == "deny"
    # With rules in force, a command whose parts cannot all be seen cannot be shown clear of them.
    assert _check(root, "eval \"$CMD\"", "accept-edits", deny=("bash(rm:*)",)) == "ask"
    assert _check(root, "bash -c \"$X\"", "accept-edits", ask=("bash(curl:*)",)) == "ask"
    assert _check(root, "echo x > .loom/settings.toml", "accept-edits") == "ask"  # the default ask rule


def _sandboxed_agent(root: Path, command: str, mode: PermissionMode, interactive: bool) -> tuple[Agent, Any]:
    workspace = Workspace.at(root)
    sandbox = real_sandbox(workspace, "bubblewrap")
    call = {"name": "bash", "input": {"command": command}}
    agent = Agent(AgentConfig(model="test-model", interactive=interactive),
                  AgentParts(provider=ScriptedProvider([{"tool_calls": [call]}, {"text": "done"}]),
                             tools=default_tools(), workspace=workspace,
                             permissions=PermissionManager(workspace, mode=mode), sandbox=sandbox),
                  system_prompt="test")
    return agent, sandbox


async def test_an_unasked_command_in_accept_edits_is_still_confined(lab: tuple[Path, Path]) -> None:
    root, outside = lab
    agent, _ = _sandboxed_agent(root, f"touch made-here; touch {outside}/escaped", "accept-edits", False)
    asked, finished = await _play(agent, "deny")
    assert asked == [] and (root / "made-here").exists() and not (outside / "escaped").exists()
    assert finished.is_error  # the write outside failed, and the model is told why
