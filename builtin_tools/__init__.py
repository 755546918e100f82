"""Loom's built-in tools, one module each."""

from __future__ import annotations

from loom_engine.tools.base import Tool

from .apply_patch import ApplyPatchTool
from .bash import BashTool
from .edit_file import EditFileTool
from .glob import GlobTool
from .grep import GrepTool
from .ls import LsTool
from .memory import MemoryTool
from .multi_edit import MultiEditTool
from .read_file import ReadFileTool
from .recall import RecallTool
from .session_search import SessionSearchTool
from .skill import SkillTool
from .task import TaskTool
from .todo_write import TodoWriteTool
from .web_fetch import WebFetchTool
from .write_file import WriteFileTool


def default_tools() -> list[Tool]:
    """One instance of every built-in tool.

    The order is the order the model sees them in (tools block and tool notes); it never
    changes within a session.
    """
    return [ReadFileTool(), WriteFileTool(), EditFileTool(), MultiEditTool(), ApplyPatchTool(),
            GlobTool(), GrepTool(), LsTool(), BashTool(), TodoWriteTool(), TaskTool(), SkillTool(),
            WebFetchTool(), SessionSearchTool(), MemoryTool(), RecallTool()]
