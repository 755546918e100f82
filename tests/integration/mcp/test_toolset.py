"""The MCP tool source inside an agent: deferred schemas with tool_search, big outputs
saved to a file, sub-agents, the permission preview. Real servers, the fake LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Finished, PermissionRequested
from loom_engine.mcp.config import parse_server
from loom_engine.mcp.manager import McpManager
from loom_engine.mcp.tools import McpToolset
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.tools.base import subagent_tool_names
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.mcp_servers import ReferenceServers

from .helpers import result_text, tool_names


@pytest.fixture
async def manager(reference_servers: ReferenceServers) -> AsyncIterator[McpManager]:
    servers = [parse_server("everything", reference_servers.everything(), Path("test"), "cli", {}),
               parse_server("bad", reference_servers.misbehaving(), Path("test"), "cli", {})]
    manager = McpManager(servers)
    manager.start()
    await manager.wait_ready(60)
    assert all(s.state == "connected" for s in manager.statuses()), manager.statuses()
    yield manager
    await manager.aclose()


def _agent(workspace: Path, server: FakeLLMServer, toolset: McpToolset, *, interactive: bool = False) -> Agent:
    ws = Workspace.at(workspace)
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    return Agent(AgentConfig(model="claude-haiku-4-5", interactive=interactive),
                 AgentParts(provider=provider, tools=default_tools(), workspace=ws, tool_source=toolset,
                            permissions=PermissionManager(ws)))


async def test_schemas_over_the_budget_are_found_with_tool_search(
        workspace: Path, fake_llm: FakeLLMServer, manager: McpManager) -> None:
    toolset = McpToolset(manager, context_window=10_000)  # 10% = 1,000 tokens: the schemas are more
    fake_llm.enqueue(Reply.tool("tool_search", {"query": "mcp__everything__echo"}),
                     Reply.tool("mcp__everything__echo", {"message": "found"}), Reply.text("ok"))
    events = [e async for e in _agent(workspace, fake_llm, toolset).run("echo")]
    assert isinstance(events[-1], Finished)
    first, second, third = fake_llm.requests
    assert "tool_search" in tool_names(first) and "read_mcp_resource" in tool_names(first)
    assert not any(n.startswith("mcp__") for n in tool_names(first))
    found = result_text(second)
    assert '"input_schema"' in found and "Message to echo" in found  # the full schema
    assert "mcp__everything__echo" in tool_names(second)  # joined the block from the next request
    assert "Echo: found" in result_text(third)


async def test_no_deferral_under_the_budget(workspace: Path, fake_llm: FakeLLMServer, manager: McpManager) -> None:
    fake_llm.enqueue(Reply.text("ok"))
    events = [e async for e in _agent(workspace, fake_llm, McpToolset(manager, context_window=1_000_000)).run("x")]
    assert isinstance(events[-1], Finished)
    names = tool_names(fake_llm.requests[0])
    assert "tool_search" not in names and "mcp__everything__echo" in names


async def test_big_output_is_saved_and_the_model_gets_its_head(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, manager: McpManager) -> None:
    spill = tmp_path / "session" / "mcp-output"
    toolset = McpToolset(manager, context_window=1_000_000, max_output_tokens=100, spill_dir=lambda: spill)
    uri = "demo://resource/static/document/architecture.md"
    fake_llm.enqueue(Reply.tool("read_mcp_resource", {"server": "everything", "uri": uri}), Reply.text("ok"))
    events = [e async for e in _agent(workspace, fake_llm, toolset).run("read")]
    assert isinstance(events[-1], Finished)
    text = result_text(fake_llm.requests[1])
    (saved,) = spill.iterdir()
    assert str(saved) in text and "over the limit of 100" in text
    whole = saved.read_text()
    assert len(whole) > 400 and text.startswith(whole[:400])


async def test_permission_request_shows_server_tool_and_arguments(
        workspace: Path, fake_llm: FakeLLMServer, manager: McpManager) -> None:
    fake_llm.enqueue(Reply.tool("mcp__bad__poke", {"value": "v1"}), Reply.text("ok"))
    agent = _agent(workspace, fake_llm, McpToolset(manager, context_window=1_000_000), interactive=True)
    from loom_engine.permissions.answer import PermissionAnswer

    seen = []
    async for event in agent.run("poke"):
        if isinstance(event, PermissionRequested):
            seen.append(event)
            agent.answer_permission(event.request_id, PermissionAnswer("allow_once"))
    (request,) = seen
    assert request.preview == {"kind": "mcp", "server": "bad", "tool": "poke",
                               "arguments": '{\n  "value": "v1"\n}'}
    assert "mcp__bad__poke" in request.suggested_rules
    assert "poked v1" in result_text(fake_llm.requests[1])


async def test_subagents_get_mcp_tools_only_when_named(manager: McpManager) -> None:
    tools = McpToolset(manager).tools()
    assert not any(name.startswith("mcp__") for name in subagent_tool_names(tools))


async def test_first_request_waits_for_servers_still_connecting(
        workspace: Path, fake_llm: FakeLLMServer, reference_servers: ReferenceServers) -> None:
    manager = McpManager([parse_server("everything", reference_servers.everything(), Path("t"), "cli", {})])
    manager.start()  # not awaited: the agent's first request waits (up to startup_wait_s)
    try:
        fake_llm.enqueue(Reply.text("ok"))
        toolset = McpToolset(manager, context_window=1_000_000, startup_wait_s=60)
        events = [e async for e in _agent(workspace, fake_llm, toolset).run("x")]
        assert isinstance(events[-1], Finished)
        assert "mcp__everything__echo" in tool_names(fake_llm.requests[0])
    finally:
        await manager.aclose()


async def test_a_slow_server_joins_a_later_turn(workspace: Path, fake_llm: FakeLLMServer,
                                                reference_servers: ReferenceServers) -> None:
    manager = McpManager([parse_server("everything", reference_servers.everything(), Path("t"), "cli", {})])
    manager.start()
    try:
        fake_llm.enqueue(Reply.text("first"), Reply.text("second"))
        agent = _agent(workspace, fake_llm, McpToolset(manager, context_window=1_000_000, startup_wait_s=0))
        [e async for e in agent.run("x")]
        await manager.wait_ready(60)
        [e async for e in agent.run("y")]
        first, second = (tool_names(r) for r in fake_llm.requests)
        assert "mcp__everything__echo" not in first and "mcp__everything__echo" in second
    finally:
        await manager.aclose()
