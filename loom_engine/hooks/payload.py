"""What a hook script reads on stdin: Claude Code's field names and tool names.

Third-party hook scripts match ``tool_name`` against Claude Code's names (``Bash``,
``Edit``...) and read ``tool_input.file_path``; Loom's tools are called ``bash``,
``edit_file`` and take ``path``. This module is the one place that translates, both
ways: a hook's ``updatedInput`` may use either spelling and is turned back into Loom's
arguments before it is validated again. Units too: Bash's ``timeout`` is in milliseconds
for the hook, in seconds for Loom.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..tool_names import CLAUDE_TOOL_NAMES

# Per Loom tool: Loom's argument name -> Claude Code's. Arguments not listed keep their name.
_KEY_NAMES: Mapping[str, Mapping[str, str]] = {
    "read_file": {"path": "file_path"},
    "write_file": {"path": "file_path"},
    "edit_file": {"path": "file_path"},
    "multi_edit": {"path": "file_path"},
    "grep": {"case_insensitive": "-i", "context": "-C", "before": "-B", "after": "-A"},
}
# Claude Code's file_path is absolute; Loom's path may be relative to the workspace root.
_ABSOLUTE_KEYS = frozenset({"file_path"})
# Per Loom tool: Loom's argument -> how many of Claude Code's units make one of Loom's.
# Loom's bash timeout is in seconds; Claude Code's Bash timeout in milliseconds, which is
# what hook scripts read, compare and send back in updatedInput (always read as ms).
_UNIT_SCALES: Mapping[str, Mapping[str, int]] = {
    "bash": {"timeout": 1000},
}


def claude_tool_name(loom_name: str) -> str:
    return CLAUDE_TOOL_NAMES.get(loom_name, loom_name)


def claude_tool_input(loom_name: str, loom_input: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The arguments with the keys hook scripts expect (``file_path`` absolute)."""
    names = _KEY_NAMES.get(loom_name, {})
    scales = _UNIT_SCALES.get(loom_name, {})
    converted: dict[str, Any] = {}
    for key, value in loom_input.items():
        if key in scales and _is_number(value):
            value = _whole(value * scales[key])
        key = names.get(key, key)
        if key in _ABSOLUTE_KEYS and isinstance(value, str) and value:
            expanded = os.path.expanduser(value)
            value = expanded if os.path.isabs(expanded) else os.path.join(root, expanded)
        converted[key] = value
    return converted


def loom_tool_input(loom_name: str, original: Mapping[str, Any], updated: Mapping[str, Any]) -> dict[str, Any]:
    """A hook's ``updatedInput`` as Loom's arguments: its keys (either spelling) over the
    call's own, so a hook that changes one field need not repeat the others."""
    back = {claude: loom for loom, claude in _KEY_NAMES.get(loom_name, {}).items()}
    scales = _UNIT_SCALES.get(loom_name, {})
    merged = dict(original)
    for key, value in updated.items():
        key = back.get(key, key)
        if key in scales and _is_number(value):
            value = _whole(value / scales[key])
        merged[key] = value  # anything else as sent: validation says what is wrong with it
    return merged


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: float) -> int | float:
    """30.0 s -> 30000 ms, not 30000.0: scripts print and compare the number."""
    return int(value) if float(value).is_integer() else value


def tool_fields(loom_name: str, loom_input: Mapping[str, Any], call_id: str, root: Path) -> dict[str, Any]:
    """The tool part of a PreToolUse / PostToolUse / PermissionRequest payload."""
    return {"tool_name": claude_tool_name(loom_name), "tool_input": claude_tool_input(loom_name, loom_input, root),
            "tool_use_id": call_id, "loom_tool_name": loom_name, "loom_tool_input": dict(loom_input)}


# The line that ends Loom's bash result (after the command's output), as bash.py writes it.
_BASH_STATUS = re.compile(r"\n(?:Exit code: -?\d+|Timed out after |Aborted by the user; |Killed by )")
# A line of read_file's output: its number, a tab, the line.
_NUMBERED_LINE = re.compile(r" *(\d+)\t(.*)")
_READ_TOTAL = re.compile(r"Showing lines \d+-\d+ of (\d+)")


def claude_tool_response(loom_name: str, loom_input: Mapping[str, Any], text: str,
                         display: Mapping[str, Any] | None, root: Path) -> dict[str, Any]:
    """PostToolUse's ``tool_response`` in the shapes Claude Code's tools give, which hook
    scripts read (the payload also carries Loom's text as ``loom_tool_response``):

    - Bash: ``{"stdout", "stderr", "interrupted", "isImage"}``. Loom runs a command with
      stdout and stderr merged into one pipe, so ``stdout`` holds all of its output (with
      Loom's redaction and cut) and ``stderr`` is always ``""``.
    - Write: ``{"type": "create" | "update", "filePath", "content", "success"}``.
    - Edit: ``{"filePath", "oldString", "newString", "replaceAll", "success"}``;
      MultiEdit: ``{"filePath", "edits", "success"}``.
    - Read: ``{"type": "text", "file": {"filePath", "content", "numLines", "startLine",
      "totalLines"}}``, the content without Loom's line numbers (``totalLines`` only when
      known).
    - Any other tool: ``{"content": text, "success": true}``, with ``filePath`` when the
      call names a file.
    """
    path = claude_tool_input(loom_name, loom_input, root).get("file_path")
    match loom_name:
        case "bash":
            shown = display or {}
            # The last one: the command's own output may contain such a line.
            ends = [status.start() for status in _BASH_STATUS.finditer(text)]
            output = text[: ends[-1]] if ends else text
            return {"stdout": "" if output == "(no output)" else output, "stderr": "",
                    "interrupted": bool(shown.get("timed_out") or shown.get("aborted")), "isImage": False}
        case "write_file":
            return {"type": "create" if text.startswith("Created ") else "update", "filePath": path,
                    "content": loom_input.get("content", ""), "success": True}
        case "edit_file":
            return {"filePath": path, "oldString": loom_input.get("old_string", ""),
                    "newString": loom_input.get("new_string", ""),
                    "replaceAll": bool(loom_input.get("replace_all", False)), "success": True}
        case "multi_edit":
            return {"filePath": path, "edits": loom_input.get("edits", []), "success": True}
        case "read_file":
            return {"type": "text", "file": {"filePath": path, **_read_lines(text)}}
    response: dict[str, Any] = {"content": text, "success": True}
    if path:
        response["filePath"] = path
    return response


def _read_lines(text: str) -> dict[str, Any]:
    """read_file's numbered lines back as the file's text, and which lines they are."""
    numbers: list[int] = []
    lines: list[str] = []
    for line in text.split("\n"):
        numbered = _NUMBERED_LINE.fullmatch(line)
        if numbered is None:
            break  # the notes after the lines (or a message with no lines at all)
        numbers.append(int(numbered[1]))
        lines.append(numbered[2])
    file: dict[str, Any] = {"content": "\n".join(lines), "numLines": len(lines),
                            "startLine": numbers[0] if numbers else 1}
    total = _READ_TOTAL.search(text)
    if total is not None:
        file["totalLines"] = int(total[1])
    elif "More lines follow" not in text:
        file["totalLines"] = numbers[-1] if numbers else 0
    return file
