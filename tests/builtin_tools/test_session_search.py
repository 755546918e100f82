"""session_search: the model finds earlier sessions; this workspace's unless it asks for
every project's, the current session left out, the answer bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools.session_search import MAX_OUTPUT_CHARS, SessionSearchTool
from loom_engine.index.session_index import SessionIndex
from loom_engine.permissions.targets import FileAccess
from tests.builtin_tools.conftest import CallTool, MakeCtx
from tests.doubles.saved_sessions import Exchange, save_session


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sessions"


@pytest.fixture
def tool(tmp_path: Path, sessions: Path) -> SessionSearchTool:
    return SessionSearchTool(SessionIndex(tmp_path / "data" / "index" / "search.db", sessions))


async def test_hits_name_the_session_its_date_project_and_the_match(tool: SessionSearchTool, sessions: Path,
                                                                    make_ctx: MakeCtx, call_tool: CallTool,
                                                                    tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ctx = make_ctx(repo)
    fixed = save_session(sessions, ctx.workspace.root, [Exchange(
        "the deploy hangs on migrations", answer="Added a lock timeout to the migration runner.",
        tools=[("edit_file", {"path": "deploy/migrate.py"})])])
    result = await call_tool(tool, ctx, query="migration timeout")
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[0] == f"1 earlier session of {ctx.workspace.root} match 'migration timeout', best first:"
    assert lines[1].startswith(f"1. {fixed.id} · 20") and lines[1].endswith(f" · {ctx.workspace.root} · 1 prompt")
    assert lines[2] == "   first prompt: the deploy hangs on migrations"
    assert "«migration»" in lines[3] and "«timeout»" in lines[3]


async def test_other_projects_only_when_asked_and_the_current_session_left_out(
        tool: SessionSearchTool, sessions: Path, make_ctx: MakeCtx, call_tool: CallTool, tmp_path: Path) -> None:
    root = make_ctx(tmp_path / "repo").workspace.root
    current = save_session(sessions, root, [Exchange("the cache eviction bug")], keep_open=True)
    earlier = save_session(sessions, root, [Exchange("cache eviction, first try")])
    elsewhere = save_session(sessions, tmp_path / "other", [Exchange("cache eviction elsewhere")])
    ctx = make_ctx(tmp_path / "repo", session_id=current.id)
    here = (await call_tool(tool, ctx, query="cache eviction")).content
    assert earlier.id in here and current.id not in here and elsewhere.id not in here
    everywhere = (await call_tool(tool, ctx, query="cache eviction", project="*")).content
    assert earlier.id in everywhere and elsewhere.id in everywhere and current.id not in everywhere
    named = (await call_tool(tool, ctx, query="cache", project=str(tmp_path / "other"))).content
    assert elsewhere.id in named and earlier.id not in named
    current.close()


async def test_no_hit_is_a_plain_answer_not_an_error(tool: SessionSearchTool, make_ctx: MakeCtx,
                                                     call_tool: CallTool) -> None:
    result = await call_tool(tool, make_ctx(), query='"unbalanced AND (')
    assert not result.is_error and result.content.startswith("No earlier session of ")


async def test_the_answer_is_bounded(tool: SessionSearchTool, sessions: Path, make_ctx: MakeCtx,
                                     call_tool: CallTool) -> None:
    ctx = make_ctx()
    for number in range(20):
        save_session(sessions, ctx.workspace.root, [Exchange(f"{number} zebra " + "words " * 400)])
    result = await call_tool(tool, ctx, query="zebra", limit=20)
    assert len(result.content) <= MAX_OUTPUT_CHARS + 100
    assert result.content.count("first prompt:") >= 5


def test_this_workspace_asks_nothing_another_project_is_a_read_outside(tool: SessionSearchTool, sessions: Path,
                                                                        make_ctx: MakeCtx, tmp_path: Path) -> None:
    def target(**given: str) -> object:
        return tool.permission_target(tool.input_model.model_validate({"query": "x", **given}), ctx)

    ctx = make_ctx(tmp_path / "repo")
    assert tool.is_read_only and tool.is_concurrency_safe and target() is None
    assert target(project="*") == FileAccess(paths=(str(sessions),), write=False)
    assert target(project=str(tmp_path / "other")) == FileAccess(paths=(str(tmp_path / "other"),), write=False)
    with pytest.raises(ValueError):
        tool.input_model.model_validate({"query": "x", "limit": 500})


async def test_through_an_agent_the_running_session_is_left_out(tmp_path: Path, sessions: Path,
                                                                 tool: SessionSearchTool) -> None:
    from loom_engine.agent import Agent
    from loom_engine.config import AgentConfig
    from loom_engine.messages import ToolResultPart
    from loom_engine.parts import AgentParts
    from loom_engine.providers.scripted import ScriptedProvider
    from loom_engine.sessions.store import SessionStore
    from loom_engine.workspace import Workspace

    workspace = Workspace.at(tmp_path)
    earlier = save_session(sessions, workspace.root, [Exchange("the kettle overheats")])
    writer = SessionStore(sessions).create(workspace.root, provider="replay", model="m")
    provider = ScriptedProvider([{"tool_calls": [{"name": "session_search", "input": {"query": "kettle"}}]},
                                 {"text": "found it"}])
    agent = Agent(AgentConfig(model="m"), AgentParts(provider=provider, tools=[tool], workspace=workspace),
                  session=writer, system_prompt="s")
    _ = [event async for event in agent.run("the kettle again: how did we fix it?")]
    writer.close()
    [result] = [p for m in agent.messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert earlier.id in result.content and writer.id not in result.content and not result.is_error
