"""Tools by name, and their specs in a stable order for the provider."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..tool_spec import ToolSpec
from .base import Tool, tool_spec


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"two tools are named {tool.name!r}")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def restricted(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with only the named tools that this one has."""
        wanted = set(names)
        return ToolRegistry(t for t in self._tools.values() if t.name in wanted)

    def specs(self) -> tuple[ToolSpec, ...]:
        # Computed once per registry use site; the order is insertion order so the
        # tools block of every request is byte-identical.
        return tuple(tool_spec(t) for t in self._tools.values())
