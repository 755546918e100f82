"""What an editor is told about a tool call: its kind, title, the files it touches, and
what it showed (an edit as a diff, a command's output as text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .sdk import (
    FileEditToolCallContent,
    ToolCallContent,
    ToolCallLocation,
    ToolKind,
    diff_content,
    terminal_content,
    text_content,
)

# Loom's tool name -> ACP's kind of tool call: the one table. MCP tools and anything not
# named here are "other".
TOOL_KINDS: Mapping[str, ToolKind] = {
    "read_file": "read", "ls": "read",
    "edit_file": "edit", "multi_edit": "edit", "write_file": "edit", "apply_patch": "edit",
    "glob": "search", "grep": "search", "session_search": "search", "recall": "search",
    "bash": "execute",
    "web_fetch": "fetch",
    "todo_write": "think", "task": "think", "memory": "think",  # the model's own notes, not a file of yours
}

# The input field that names the file or folder a tool works on.
_PATH_FIELDS = ("path", "file_path")
_TITLE_WIDTH = 80


def tool_kind(name: str) -> ToolKind:
    return TOOL_KINDS.get(name, "other")


def tool_title(name: str, arguments: Mapping[str, Any]) -> str:
    """One line for the call, as a person would say it: ``Read src/app.py``, ``Run `make```."""
    path = _path_of(arguments)
    match tool_kind(name):
        case "read" if path:
            title = f"Read {path}"
        case "edit" if path:
            title = f"Edit {path}"
        case "edit":
            title = "Apply a patch" if name == "apply_patch" else "Edit files"
        case "execute":
            title = f"Run `{arguments.get('command', '')}`"
        case "search":
            where = f" in {path}" if path and path != "." else ""
            title = f"Search `{arguments.get('pattern', '')}`{where}"
        case "fetch":
            title = f"Fetch {arguments.get('url', '')}"
        case _ if name == "task":
            title = f"Task: {arguments.get('description', '')}"
        case _ if name == "todo_write":
            title = "Update the plan"
        case _ if name == "memory":
            title = f"Memory: {arguments.get('command', '')} {path or arguments.get('old_path', '')}"
        case _:
            title = name
    title = " ".join(title.split())  # a multi-line command on one line
    return title if len(title) <= _TITLE_WIDTH else title[:_TITLE_WIDTH - 1] + "…"


def tool_locations(arguments: Mapping[str, Any], root: Path) -> list[ToolCallLocation]:
    """The file the call touches, as an absolute path (what an editor can open)."""
    path = _path_of(arguments)
    if not path:
        return []
    return [ToolCallLocation(path=str(root / path) if not Path(path).is_absolute() else path)]


def display_content(display: Mapping[str, Any] | None, root: Path) -> list[ToolCallContent]:
    """A tool's display (or a question's preview) as ACP content: a diff as the old and
    new text of the lines it changes; a command as its text."""
    if not display:
        return []
    kind = display.get("kind")
    if kind == "diff" and display.get("diff"):
        old, new = diff_sides(str(display["diff"]))
        path = str(display.get("path", ""))
        return [diff_content(str(root / path) if path and not Path(path).is_absolute() else path,
                             old or None, new)]
    if kind == "command" and display.get("command"):
        return [text_content(f"$ {display['command']}")]
    return []


def result_content(name: str, text: str, display: Mapping[str, Any] | None, root: Path) -> list[ToolCallContent]:
    """What a finished call shows: its diff when it made one, else its output."""
    shown = display_content(display, root)
    if any(isinstance(item, FileEditToolCallContent) for item in shown):
        return shown
    # A command the editor ran keeps its terminal in the call, above the output Loom read.
    terminal: list[ToolCallContent] = (
        [terminal_content(str(display["terminal_id"]))] if display and display.get("terminal_id") else [])
    return [*terminal, text_content(text)] if text else terminal


def diff_sides(diff: str) -> tuple[str, str]:
    """The old and the new text of a unified diff's hunks (context lines in both).

    Hunks far apart are joined with a ``…`` line: an editor shows the changed region, not
    the whole file, which Loom's display does not carry.
    """
    old: list[str] = []
    new: list[str] = []
    seen_hunk = False
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")) and not seen_hunk:
            continue
        if line.startswith("@@"):
            if seen_hunk:
                old.append("…")
                new.append("…")
            seen_hunk = True
            continue
        if not seen_hunk or line.startswith("\\"):  # "\ No newline at end of file"
            continue
        body = line[1:]
        if line.startswith("-"):
            old.append(body)
        elif line.startswith("+"):
            new.append(body)
        else:
            old.append(body)
            new.append(body)
    return _joined(old), _joined(new)


def _joined(lines: Sequence[str]) -> str:
    return "\n".join(lines) + ("\n" if lines else "")


def _path_of(arguments: Mapping[str, Any]) -> str:
    for field in _PATH_FIELDS:
        value = arguments.get(field)
        if isinstance(value, str) and value:
            return value
    return ""
