"""Loom's built-in tools, one module each."""

from __future__ import annotations

import importlib
import inspect

from loom_engine.tools.base import BaseTool, Tool

# The order is the order the model sees them in; it never changes within a session.
TOOL_MODULES = ("read_file", "write_file", "edit_file", "multi_edit", "apply_patch", "glob", "grep", "ls",
                "bash", "todo_write", "task", "skill", "web_fetch")


def default_tools() -> list[Tool]:
    """One instance of every built-in tool."""
    tools: list[Tool] = []
    for module_name in TOOL_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as error:
            if error.name == f"{__name__}.{module_name}":
                continue  # not shipped in this build
            raise
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseTool) and cls.__module__ == module.__name__ and getattr(cls, "name", None):
                tools.append(cls())
    return tools
