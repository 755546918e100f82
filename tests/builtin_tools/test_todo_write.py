"""todo_write: validation, replacement, the event, the rendering."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from builtin_tools.todo_write import TodoWriteInput, TodoWriteTool
from loom_engine.events import AgentEvent, TodosUpdated


@pytest.fixture
def events() -> list[AgentEvent]:
    return []


@pytest.fixture
def tctx(make_ctx, events):  # type: ignore[no-untyped-def]
    return make_ctx(emit=events.append)


async def test_replaces_the_list_emits_it_and_renders_it(tctx, events, call_tool):
    tctx.state.todos = [{"content": "old", "status": "pending"}]
    todos = [
        {"content": "Read the failing test", "status": "completed"},
        {"content": "Fix the parser", "status": "in_progress"},
        {"content": "Run the suite", "status": "pending"},
    ]
    out = await call_tool(TodoWriteTool(), tctx, todos=todos)
    assert not out.is_error
    assert tctx.state.todos == todos
    assert events == [TodosUpdated(todos=tuple(todos))]
    assert out.content.splitlines() == [
        "Todo list updated (3 items: 1 completed, 1 in progress, 1 pending):",
        "[x] Read the failing test",
        "[~] Fix the parser",
        "[ ] Run the suite",
    ]
    assert out.display == {"kind": "todos", "todos": todos}


async def test_empty_list_clears(tctx, events, call_tool):
    tctx.state.todos = [{"content": "old", "status": "pending"}]
    out = await call_tool(TodoWriteTool(), tctx, todos=[])
    assert out.content == "Todo list cleared."
    assert tctx.state.todos == [] and events == [TodosUpdated(todos=())]


async def test_extra_fields_from_other_agents_are_dropped(tctx, call_tool):
    await call_tool(TodoWriteTool(), tctx, todos=[
        {"content": "  Write docs ", "status": "pending", "id": "1", "priority": "high"}])
    assert tctx.state.todos == [{"content": "Write docs", "status": "pending"}]


@pytest.mark.parametrize("todos", [
    [{"content": "x", "status": "done"}],
    [{"content": "   ", "status": "pending"}],
    [{"status": "pending"}],
    [{"content": "x"}],
    "not a list",
])
def test_invalid_items_are_refused(todos):
    with pytest.raises(ValidationError):
        TodoWriteInput.model_validate({"todos": todos})


def test_tool_contract(ctx):
    tool = TodoWriteTool()
    assert tool.name == "todo_write" and not tool.is_read_only and not tool.is_concurrency_safe
    assert tool.permission_target(TodoWriteInput(todos=[]), ctx) is None
    schema = TodoWriteInput.model_json_schema()
    item = schema["$defs"]["TodoItem"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert set(item["required"]) == {"content", "status"}
