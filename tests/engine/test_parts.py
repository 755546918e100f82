"""AgentParts: what a sub-agent shares with its parent, and what it narrows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from loom_engine.bus import EventBus
from loom_engine.config import AgentConfig
from loom_engine.hooks.config import HookSet
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.base import Provider
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.subagents.definitions import AgentDefinition
from loom_engine.tools.base import Tool
from loom_engine.tools.function_tool import tool
from loom_engine.workspace import Workspace


@tool(read_only=True)
def look(path: str) -> str:
    """Look at a file."""
    return path


@tool
def change(path: str) -> str:
    """Change a file."""
    return path


@tool(read_only=True)
def mcp__docs__search(query: str) -> str:
    """Search the docs."""
    return query


class Joined:
    """A tool source with one tool that joined after the start (an MCP server's)."""

    version = 1

    def tools(self) -> Sequence[Tool]:
        return (mcp__docs__search,)

    async def settle(self) -> None:
        return None

    def sent_names(self) -> frozenset[str] | None:
        return None


def _definition(**fields: object) -> AgentDefinition:
    return AgentDefinition(name="reviewer", description="reviews", prompt="You review.", path=Path("r.md"),
                           source="user", **fields)  # type: ignore[arg-type]


def _parts(tmp_path: Path, **fields: object) -> AgentParts:
    workspace = Workspace.at(tmp_path)
    return AgentParts(provider=ScriptedProvider([]), tools=[look, change], workspace=workspace,
                      tool_source=Joined(), permissions=PermissionManager(workspace, mode="accept-edits"),
                      **fields)  # type: ignore[arg-type]


def test_the_tools_given_are_kept_as_a_tuple(tmp_path: Path) -> None:
    parts = AgentParts(provider=ScriptedProvider([]), tools=[look], workspace=Workspace.at(tmp_path))
    assert parts.tools == (look,)
    assert isinstance(parts.bus, EventBus) and parts.hooks == HookSet()


def test_a_child_has_the_tools_its_configuration_names_the_sources_included_and_no_source(tmp_path: Path) -> None:
    parent = _parts(tmp_path)
    config = AgentConfig(model="m").inherit(tools=("look", "mcp__docs__search", "missing"))
    child = parent.for_child(config, None, vendor=config.provider)
    assert [t.name for t in child.tools] == ["look", "mcp__docs__search"]
    assert child.tool_source is None  # the parent's tools as they are now, fixed for the child
    assert child.bus is parent.bus and child.hooks is parent.hooks and child.workspace is parent.workspace


def test_a_child_follows_the_parents_rules_and_a_custom_mode_only_narrows(tmp_path: Path) -> None:
    parent = _parts(tmp_path)
    config = AgentConfig(model="m").inherit()
    assert parent.permissions is not None
    general = parent.for_child(config, None, vendor=config.provider).permissions
    planner = parent.for_child(config, _definition(permission_mode="plan"), vendor=config.provider).permissions
    wider = parent.for_child(config, _definition(permission_mode="bypass"), vendor=config.provider).permissions
    assert general is not None and general is not parent.permissions and general.mode == "accept-edits"
    assert planner is not None and planner.mode == "plan"
    assert wider is not None and wider.mode == "accept-edits"


def test_a_child_on_another_vendor_gets_that_vendors_provider(tmp_path: Path) -> None:
    made: list[str] = []

    def make_provider(name: str) -> Provider:
        made.append(name)
        return ScriptedProvider([])

    parent = _parts(tmp_path, make_provider=make_provider)
    same = AgentConfig(model="m", provider="anthropic").inherit()
    assert parent.for_child(same, None, vendor="anthropic").provider is parent.provider
    other = AgentConfig(model="gpt-5", provider="openai").inherit()
    assert parent.for_child(other, None, vendor="anthropic").provider is not parent.provider
    assert made == ["openai"]


def test_another_vendor_without_a_provider_maker_is_refused(tmp_path: Path) -> None:
    other = AgentConfig(model="gpt-5", provider="openai").inherit()
    with pytest.raises(ValueError, match="openai provider is not available"):
        _parts(tmp_path).for_child(other, None, vendor="anthropic")
