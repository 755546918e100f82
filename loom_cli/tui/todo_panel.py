"""The live todo list written by the `todo_write` tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import Static

_ICONS = {"completed": ("☑", "green"), "in_progress": ("◐", "bold yellow"), "pending": ("☐", "")}


def todo_label(todo: Mapping[str, Any]) -> str:
    for key in ("content", "text", "title", "task", "description"):
        value = todo.get(key)
        if isinstance(value, str) and value:
            if todo.get("status") == "in_progress" and isinstance(todo.get("activeForm"), str):
                return str(todo["activeForm"])
            return value
    return str(dict(todo))


def todo_text(todos: Sequence[Mapping[str, Any]]) -> Text:
    done = sum(1 for t in todos if t.get("status") == "completed")
    text = Text()
    text.append(f"Todos {done}/{len(todos)}", style="bold")
    for todo in todos:
        status = str(todo.get("status", "pending"))
        icon, style = _ICONS.get(status, ("•", ""))
        line_style = "dim strike" if status == "completed" else style
        text.append(f"\n {icon} ", style=style)
        text.append(todo_label(todo), style=line_style)
    return text


class TodoPanel(Static):
    DEFAULT_CSS = """
    TodoPanel {
        height: auto;
        max-height: 12;
        padding: 0 1;
        border-top: solid $primary 40%;
        display: none;
    }
    TodoPanel.has-todos {
        display: block;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.todos: tuple[Mapping[str, Any], ...] = ()

    def set_todos(self, todos: Sequence[Mapping[str, Any]]) -> None:
        self.todos = tuple(todos)
        all_done = bool(todos) and all(t.get("status") == "completed" for t in todos)
        self.set_class(bool(todos) and not all_done, "has-todos")
        self.update(todo_text(todos) if todos else "")
