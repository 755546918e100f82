"""Claude Code's user folder (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``), read as the user's own.

A user switching from Claude Code keeps what they set up there: ``CLAUDE.md`` (the
context assembler reads it beside Loom's ``LOOM.md``), ``agents/``, ``commands/`` and
``skills/`` (the catalogs read them before Loom's own user folder, so Loom's wins on a
name clash: :func:`loom_engine.catalog.user_places`), and ``settings.json``, whose
``permissions`` and ``hooks`` count as the user's own (no trust question: the user
wrote them, outside any project) and are applied before Loom's ``config.toml``, and
whose ``env`` is set in Loom's environment at start-up, as Claude Code does. The MCP
servers `claude mcp add` wrote to ``~/.claude.json`` (user and local scope) are read
by :func:`loom_engine.mcp.config.claude_servers`, under the same switch.

Reading it is on unless the user turns it off: ``[claude] read_user_folder = false`` in
their ``config.toml``, or ``LOOM_READ_CLAUDE_HOME=0`` for one process (the variable wins
either way). Only the user's own file decides: a project's settings cannot switch it (a
cloned repository must not be able to turn the user's deny rules off, nor on).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from loom_engine.catalog import SOURCE_CLAUDE_HOME
from loom_engine.paths import READ_CLAUDE_HOME_VARIABLE, claude_config_file

from .claude_settings import ClaudeFile, read_json, translate_permissions

CLAUDE_TABLE = "claude"
SWITCH_KEY = "read_user_folder"
SETTINGS_NAME = "settings.json"
ENV_KEY = "env"


def enabled_in(user_config: Mapping[str, Any]) -> bool:
    """The switch as the user's config.toml (already read) sets it; on by default."""
    table = user_config.get(CLAUDE_TABLE, {})
    return not isinstance(table, Mapping) or table.get(SWITCH_KEY, True) is not False


def home_label(home: Path, name: str = "") -> str:
    """How a file of the folder is named to the user: ``~/.claude/settings.json`` for the
    usual place, the full path when ``$CLAUDE_CONFIG_DIR`` moved it."""
    usual = Path.home() / ".claude"
    base = SOURCE_CLAUDE_HOME if os.path.abspath(home) == os.path.abspath(usual) else str(home)
    return f"{base}/{name}" if name else base


def claude_home_line(home: Path | None) -> str:
    """For `loom config`: the folder read, or how reading it is off."""
    if home is None:
        return (f"not read (turned off: [{CLAUDE_TABLE}] {SWITCH_KEY} = false in config.toml, "
                f"or {READ_CLAUDE_HOME_VARIABLE})")
    state = "" if home.is_dir() else " (missing)"
    return (f"{home}{state}: CLAUDE.md, agents/, commands/, skills/, settings.json and the MCP servers of "
            f"{claude_config_file(home)} read as yours; Loom's own folder wins on a name clash")


def read_user_claude_settings(home: Path | None) -> tuple[ClaudeFile | None, list[str]]:
    """``settings.json`` of the folder in Loom's settings shape (permissions, mode,
    folders, and its ``hooks`` table as Claude Code wrote it), and one line per problem."""
    if home is None:
        return None, []
    path = home / SETTINGS_NAME
    source = home_label(home, SETTINGS_NAME)
    data, problem = read_json(path, source)
    if problem is not None or data is None:
        return None, [problem] if problem else []
    translated = translate_permissions(home, path, source, data)
    fragment = dict(translated.data)
    if "hooks" in data:
        fragment["hooks"] = data["hooks"]
    return ClaudeFile(path, source, fragment, translated.problems), list(translated.problems)


def claude_env(home: Path | None) -> tuple[dict[str, str], list[str]]:
    """The ``env`` of the folder's settings.json (variable -> value) and one line per
    entry left out (a value that is not text or number)."""
    if home is None:
        return {}, []
    source = home_label(home, SETTINGS_NAME)
    data, problem = read_json(home / SETTINGS_NAME, source)
    if data is None:
        return {}, [problem] if problem else []
    table = data.get(ENV_KEY)
    if table is None:
        return {}, []
    if not isinstance(table, dict):
        return {}, [f"{source}: env: not a JSON object: skipped"]
    values: dict[str, str] = {}
    problems: list[str] = []
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append(f"{source}: env.{name}: not a string or number: skipped")
            continue
        values[str(name)] = str(value)
    return values, problems


def apply_claude_env(home: Path | None, environ: MutableMapping[str, str]) -> list[str]:
    """Set the folder's ``env`` in ``environ`` (Loom's own environment, which its tools,
    hooks and MCP servers inherit), as Claude Code sets it for its session; the problems."""
    values, problems = claude_env(home)
    environ.update(values)
    return problems
