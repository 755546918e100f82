"""The permission stage of the tool pipeline, with the built-in edit tools and a real manager:
what is asked, what is never asked, and what "always allow" saves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import PermissionRequested, ToolFinished
from loom_engine.parts import AgentParts
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace

PATCH_MISSING = ("*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n"
                 "*** End Patch\n")


def make_agent(root: Path, turns: list[Any], saved: list[str],
               saves: list[tuple[str, ...]] | None = None) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(turns, record_requests=True)
    workspace = Workspace.at(root)

    def save(rules: Any) -> None:
        if saves is not None:
            saves.append(tuple(rules))
        saved.extend(rules)

    permissions = PermissionManager(workspace, mode="default", save_rules=save)
    agent = Agent(AgentConfig(model="test-model"),
                  AgentParts(provider=provider, tools=default_tools(), workspace=workspace, permissions=permissions),
                  system_prompt="You are a test.")
    return agent, provider


async def play(agent: Agent, answer: PermissionAnswer) -> tuple[list[PermissionRequested], list[ToolFinished]]:
    asked: list[PermissionRequested] = []
    finished: list[ToolFinished] = []
    async for event in agent.run("go"):
        if isinstance(event, PermissionRequested):
            asked.append(event)
            agent.answer_permission(event.request_id, answer)
        elif isinstance(event, ToolFinished):
            finished.append(event)
    return asked, finished


@pytest.mark.parametrize("call", [
    {"name": "edit_file", "input": {"path": "calc.py", "old_string": "a * b", "new_string": "a + b"}},
    {"name": "edit_file", "input": {"path": "calc.py", "old_string": "    return", "new_string": "  return"}},
    {"name": "multi_edit", "input": {"path": "calc.py", "edits": [
        {"old_string": "def add", "new_string": "def plus"}, {"old_string": "nowhere", "new_string": "x"}]}},
    {"name": "apply_patch", "input": {"patch": PATCH_MISSING}},
], ids=["not-found", "not-unique", "multi-edit", "patch"])
async def test_an_edit_that_cannot_apply_fails_without_asking(tmp_path: Path, call: dict[str, Any]) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n")
    read = {"name": "read_file", "input": {"path": "calc.py"}}
    agent, provider = make_agent(tmp_path, [{"tool_calls": [read]}, {"tool_calls": [call]}, {"text": "ok"}], [])
    asked, finished = await play(agent, PermissionAnswer("allow_once"))
    assert asked == []  # the user is not asked about a call that cannot work
    result = finished[-1]
    assert result.is_error and ("not found" in result.content or "occurs 2 times" in result.content
                                or "were not found" in result.content)
    # The model got the error and went on.
    assert len(provider.requests) == 3
    assert (tmp_path / "calc.py").read_text().startswith("def add")


async def test_an_edit_that_applies_still_asks(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    read = {"name": "read_file", "input": {"path": "calc.py"}}
    edit = {"name": "edit_file", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}
    saved: list[str] = []
    agent, _provider = make_agent(tmp_path, [{"tool_calls": [read]}, {"tool_calls": [edit]}, {"text": "ok"}], saved)
    asked, _finished = await play(agent, PermissionAnswer("allow_project"))
    [request] = asked
    assert request.suggested_rules == ("edit_file(./calc.py)",)
    assert saved == ["edit_file(./calc.py)"]
    assert "a + b" in (tmp_path / "calc.py").read_text()


async def test_always_allow_without_a_rule_saves_nothing(tmp_path: Path) -> None:
    loop = {"name": "bash", "input": {"command": "for i in 1 2; do echo $i; done"}}
    saves: list[tuple[str, ...]] = []
    agent, _provider = make_agent(tmp_path, [{"tool_calls": [loop]}, {"text": "ok"}], [], saves)
    asked, finished = await play(agent, PermissionAnswer("allow_project"))
    [request] = asked
    assert request.suggested_rules == ()
    assert saves == []  # the saver is not even called: no empty `allow = []` written
    assert not finished[-1].is_error  # still allowed this once
    assert not [r for r in agent.permissions.effective_rules() if r[2] in ("session", "saved answers")]
