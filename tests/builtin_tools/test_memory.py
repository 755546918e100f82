"""The memory tool: Anthropic's command set over a scope's store, stale views refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools.memory import MemoryTool
from loom_engine.memory.entries import Scope
from loom_engine.memory.folder import MemoryFolder
from loom_engine.tools.base import ToolContext, ToolError

from .conftest import CallTool, MakeCtx


@pytest.fixture
def folder(tmp_path: Path) -> MemoryFolder:
    return MemoryFolder(tmp_path / "mem")


@pytest.fixture
def mctx(make_ctx: MakeCtx, folder: MemoryFolder, tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path / "ws", memory_scopes={Scope.GLOBAL: folder})


async def test_commands(call_tool: CallTool, mctx: ToolContext, folder: MemoryFolder) -> None:
    tool = MemoryTool()
    out = await call_tool(tool, mctx, command="create", path="/memories/MEMORY.md", file_text="- uses uv\n")
    assert not out.is_error and "Saved to memory: /memories/MEMORY.md created" in out.content
    assert out.display is not None and out.display["summary"] == "saved to memory: /memories/MEMORY.md"
    assert "+- uses uv" in str(out.display["diff"])
    index = "/memories/MEMORY.md"
    await call_tool(tool, mctx, command="insert", path=index, insert_line=1, insert_text="- tests: pytest")
    await call_tool(tool, mctx, command="str_replace", path=index, old_str="uv", new_str="uv (never pip)")
    assert folder.index_text() == "- uses uv (never pip)\n- tests: pytest\n"
    view = await call_tool(tool, mctx, command="view", path="/memories/MEMORY.md", view_range=[2, -1])
    assert view.content == "/memories/MEMORY.md:\n     2\t- tests: pytest"
    await call_tool(tool, mctx, command="rename", old_path="/memories/MEMORY.md", new_path="/memories/t/build.md")
    listing = await call_tool(tool, mctx, command="view", path="/memories")
    assert "/memories/t/build.md" in listing.content and "MEMORY.md" not in listing.content
    await call_tool(tool, mctx, command="delete", path="/memories/t/build.md")
    assert folder.list() == []


async def test_errors_are_one_line(call_tool: CallTool, mctx: ToolContext) -> None:
    tool = MemoryTool()
    with pytest.raises(ToolError, match="memory paths start with /memories/"):
        await call_tool(tool, mctx, command="view", path="/etc/passwd")
    out = await call_tool(tool, mctx, command="create", path="/memories/../x.md", file_text="x")
    assert out.is_error and "'..'" in out.content
    with pytest.raises(ToolError, match="does not exist"):
        await call_tool(tool, mctx, command="str_replace", path="/memories/none.md", old_str="a", new_str="b")
    with pytest.raises(ToolError, match=r"no shared memory here \(scopes available: global\)"):
        await call_tool(tool, mctx, command="view", path="/memories", scope="shared")


async def test_edit_on_an_outdated_view_is_refused_with_the_current_text(
        call_tool: CallTool, mctx: ToolContext, folder: MemoryFolder) -> None:
    tool = MemoryTool()
    await call_tool(tool, mctx, command="create", path="/memories/notes.md", file_text="alpha\n")
    await call_tool(tool, mctx, command="view", path="/memories/notes.md")
    entry = folder.get("notes.md")
    assert entry is not None
    folder.put("notes.md", "alpha\nbeta from another agent\n", expected=entry.version)  # another process
    out = await call_tool(tool, mctx, command="str_replace", path="/memories/notes.md", old_str="alpha", new_str="A")
    assert out.is_error and "was changed by another agent since you read it" in out.content
    assert "beta from another agent" in out.content
    assert folder.index_text() == "" and folder.get("notes.md").content.startswith("alpha\nbeta")  # type: ignore[union-attr]
    # the refusal showed the current text: the next edit goes through
    out = await call_tool(tool, mctx, command="str_replace", path="/memories/notes.md", old_str="alpha", new_str="A")
    assert not out.is_error


async def test_create_over_an_unseen_file_is_refused(call_tool: CallTool, mctx: ToolContext,
                                                     folder: MemoryFolder) -> None:
    folder.put("MEMORY.md", "- kept\n", expected=None)
    with pytest.raises(ToolError, match="already exists; view it first"):
        await call_tool(MemoryTool(), mctx, command="create", path="/memories/MEMORY.md", file_text="- lost\n")
    assert folder.index_text() == "- kept\n"


async def test_secret_removed_and_said(call_tool: CallTool, mctx: ToolContext, folder: MemoryFolder) -> None:
    out = await call_tool(MemoryTool(), mctx, command="create", path="/memories/k.md",
                          file_text="token = 'ghp_" + "a1B2c3D4e5" * 4 + "'\n")
    assert "(secrets removed)" in out.content
    assert "ghp_" not in (folder.get("k.md").content)  # type: ignore[union-attr]


async def test_plan_mode_reads_the_notes_but_writes_none(tmp_path: Path, folder: MemoryFolder) -> None:
    from loom_engine.agent import Agent
    from loom_engine.config import AgentConfig
    from loom_engine.events import ToolFinished
    from loom_engine.parts import AgentParts
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.providers.scripted import ScriptedProvider
    from loom_engine.workspace import Workspace

    folder.put("MEMORY.md", "- uses uv\n", expected=None)
    workspace = Workspace.at(tmp_path)
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "memory", "input": {"command": "view", "path": "/memories/MEMORY.md"}},
                        {"name": "memory", "input": {"command": "create", "path": "/memories/b.md",
                                                     "file_text": "x"}}]},
        {"text": "planned"}])
    agent = Agent(AgentConfig(model="m", provider="scripted"),
                  AgentParts(provider=provider, workspace=workspace, tools=[MemoryTool()], memory=folder,
                             permissions=PermissionManager(workspace, mode="plan")), system_prompt="s")
    finished = [event async for event in agent.run("plan it") if isinstance(event, ToolFinished)]
    viewed, created = sorted(finished, key=lambda event: event.is_error)
    assert not viewed.is_error and "- uses uv" in viewed.content
    assert created.denied and "plan mode" in created.content and folder.get("b.md") is None
