"""Claude Code's names for Loom's built-in tools: the one table.

Files written for Claude Code name tools its way — hook matchers and payloads (``Bash``,
``Edit``), ``allowed-tools`` of skills and commands, ``tools:`` of agent files — and Loom
reads them as they are. MCP tools are named ``mcp__server__tool`` in both; any other tool
keeps Loom's name.
"""

from __future__ import annotations

from collections.abc import Mapping

# Loom's tool name -> Claude Code's.
CLAUDE_TOOL_NAMES: Mapping[str, str] = {
    "bash": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit",
    "multi_edit": "MultiEdit", "glob": "Glob", "grep": "Grep", "ls": "LS", "web_fetch": "WebFetch",
    "task": "Task", "todo_write": "TodoWrite", "skill": "Skill",
}

# Claude Code's name, lower-case -> Loom's (``Read``, ``read`` and ``READ`` all mean read_file).
LOOM_TOOL_NAMES: Mapping[str, str] = {claude.lower(): loom for loom, claude in CLAUDE_TOOL_NAMES.items()}
