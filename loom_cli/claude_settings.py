"""Claude Code's project settings files, read for what Loom applies from them.

``.claude/settings.json`` and ``.claude/settings.local.json`` sit in the workspace, so a
cloned repository can ship either. Their ``hooks`` are read by :mod:`.hook_setup`; their
``permissions`` here, turned into a Loom settings fragment that goes through the same
trust split as ``.loom/settings.toml`` (:mod:`.project_trust`):

* ``deny`` and ``ask`` rules (Claude Code's syntax, see
  :mod:`loom_engine.permissions.claude_rules`) apply at once: they only narrow;
* ``allow`` rules, a looser ``defaultMode`` and ``additionalDirectories`` widen, so they
  apply only once the user trusts the workspace.

The user's own ``~/.claude/settings.json`` is read with the same translation by
:mod:`.claude_home` (trusted: it is not the project's). Every other key is Claude Code's
business and is not read. A file that cannot be read is
one problem line and skipped, as is a part of ``permissions`` of the wrong shape.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_engine.permissions.claude_rules import claude_rule
from loom_engine.permissions.modes import CLAUDE_MODE_NAMES, PermissionMode
from loom_engine.permissions.rules import Behavior

from .project_trust import ADD_DIRS_KEY

CLAUDE_FILES = (".claude/settings.json", ".claude/settings.local.json")
_MODES: Mapping[str, PermissionMode] = {claude: mode for mode, claude in CLAUDE_MODE_NAMES.items()}
_BEHAVIORS: tuple[Behavior, ...] = ("deny", "ask", "allow")


@dataclass(frozen=True)
class ClaudeFile:
    """One of Claude Code's files: what Loom applies from it, in Loom's settings shape."""

    path: Path
    source: str  # ".claude/settings.json"
    data: Mapping[str, Any]  # {"permissions": {...}, "permission_mode": ..., "add_dirs": [...]}
    problems: tuple[str, ...] = ()


def read_json(path: Path, name: str) -> tuple[Mapping[str, Any] | None, str | None]:
    """(the file's object, None), (None, a one-line problem) or (None, None) when there is
    no such file."""
    if not path.is_file():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        byte = error.object[error.start]
        return None, f"{name}: not UTF-8 text (byte 0x{byte:02x} at position {error.start}): skipped"
    except json.JSONDecodeError as error:
        return None, f"{name}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}): skipped"
    except RecursionError:
        return None, f"{name}: nested too deeply to read: skipped"
    except OSError as error:
        return None, f"{name}: cannot be read ({error.strerror or error}): skipped"
    if not isinstance(data, dict):
        return None, f"{name}: not a JSON object: skipped"
    return data, None


def read_claude_files(workspace: Path) -> tuple[list[ClaudeFile], list[str]]:
    """The Claude Code files that exist, in the order they apply, and one line per file
    that could not be read."""
    found: list[ClaudeFile] = []
    problems: list[str] = []
    for name in CLAUDE_FILES:
        data, problem = read_json(workspace / name, name)
        if problem is not None:
            problems.append(problem)
        elif data is not None:
            found.append(translate_permissions(workspace, workspace / name, name, data))
    return found, problems


def translate_permissions(base: Path, path: Path, source: str, data: Mapping[str, Any]) -> ClaudeFile:
    """``permissions`` of one Claude Code settings file in Loom's settings shape; relative
    ``additionalDirectories`` are taken from ``base`` (the project root; the folder
    itself for the user's own file)."""
    workspace = base
    permissions = data.get("permissions")
    if permissions is None:
        return ClaudeFile(path, source, {})
    if not isinstance(permissions, dict):
        return ClaudeFile(path, source, {}, (f"{source}: permissions: not a JSON object: skipped",))
    problems: list[str] = []
    rules: dict[str, list[str]] = {behavior: [] for behavior in _BEHAVIORS}
    for behavior in _BEHAVIORS:
        texts = _strings(permissions, behavior, source, problems)
        for text in texts:
            rule = claude_rule(text, behavior)
            if rule.note is not None:
                problems.append(f"{source}: {behavior} rule {text!r}: {rule.note}")
            if rule.rule is not None:
                rules[rule.behavior].append(rule.rule)
    fragment: dict[str, Any] = {}
    if any(rules.values()):
        fragment["permissions"] = {behavior: texts for behavior, texts in rules.items() if texts}
    mode = permissions.get("defaultMode")
    if mode is not None:
        if isinstance(mode, str) and mode in _MODES:
            fragment["permission_mode"] = _MODES[mode]
        else:
            problems.append(f"{source}: defaultMode {mode!r} is not a mode Loom has "
                            f"({', '.join(_MODES)}): left out")
    folders = _strings(permissions, "additionalDirectories", source, problems)
    if folders:
        fragment[ADD_DIRS_KEY] = [_absolute(workspace, folder) for folder in folders]
    return ClaudeFile(path, source, fragment, tuple(problems))


def _strings(permissions: Mapping[str, Any], key: str, source: str, problems: list[str]) -> list[str]:
    value = permissions.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(f"{source}: permissions.{key}: not a list of strings: skipped")
        return []
    return value


def _absolute(workspace: Path, folder: str) -> str:
    """A folder as Claude Code reads it: ``~`` expanded, relative to the project root."""
    expanded = os.path.expanduser(folder)
    return os.path.normpath(os.path.join(workspace, expanded))
