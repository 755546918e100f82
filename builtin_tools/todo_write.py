"""todo_write: the session's task list, replaced as a whole on every call."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from loom_engine.events import TodosUpdated
from loom_engine.permissions.targets import PermissionTarget
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

TodoStatus = Literal["pending", "in_progress", "completed"]
_MARKS: dict[str, str] = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class TodoItem(BaseModel):
    content: str = Field(description="What to do, as a short imperative sentence.")
    status: TodoStatus = Field(description="pending, in_progress or completed.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("a todo needs some text")
        return value


class TodoWriteInput(BaseModel):
    todos: list[TodoItem] = Field(description=(
        "The complete, updated list; it replaces the previous one (an empty list clears it)."))


class TodoWriteTool(BaseTool[TodoWriteInput]):
    name = "todo_write"
    description = (
        "Keep a visible task list for work with several steps. Send the whole list each "
        "time (it replaces the old one). Mark a task in_progress before starting it and "
        "completed as soon as it is done; keep one task in_progress at a time. Skip it "
        "for trivial one-step requests."
    )
    input_model = TodoWriteInput
    is_concurrency_safe = False
    is_read_only = False
    guidance = (
        "todo_write replaces the task list the user sees. Use it for work with three or "
        "more steps: one item in_progress at a time, marked completed as soon as it is "
        "done.")
    session_only = True

    def permission_target(self, args: TodoWriteInput, ctx: ToolContext) -> PermissionTarget | None:
        return None

    async def run(self, args: TodoWriteInput, ctx: ToolContext) -> ToolOutput:
        todos = [{"content": t.content, "status": t.status} for t in args.todos]
        ctx.state.todos = todos
        ctx.emit(TodosUpdated(todos=tuple(dict(t) for t in todos)))
        return ToolOutput(render_todos(todos), display={"kind": "todos", "todos": todos})


def render_todos(todos: list[dict[str, str]]) -> str:
    if not todos:
        return "Todo list cleared."
    counts = {s: sum(1 for t in todos if t["status"] == s) for s in _MARKS}
    summary = (f"Todo list updated ({len(todos)} item{'s' if len(todos) != 1 else ''}: "
               f"{counts['completed']} completed, {counts['in_progress']} in progress, "
               f"{counts['pending']} pending):")
    lines = [summary, *(f"{_MARKS[t['status']]} {t['content']}" for t in todos)]
    return "\n".join(lines)
