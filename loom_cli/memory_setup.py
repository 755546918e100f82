"""The project's long-term memory for one Loom process, per the ``[memory]`` settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.memory.entries import MemoryStore, Scope

if TYPE_CHECKING:
    from loom_engine.context.assembler import PromptComponent
    from loom_engine.memory.folder import MemoryFolder
    from loom_engine.redact import Redactor
    from loom_engine.tools.base import Tool

    from .settings import MemorySettings

# The tools that exist only with memory on.
MEMORY_TOOL_NAMES = frozenset({"memory", "recall"})


@dataclass(frozen=True)
class ProjectMemory:
    folder: MemoryFolder

    @property
    def scopes(self) -> Mapping[Scope, MemoryStore]:
        return {Scope.GLOBAL: self.folder}

    def prompt_component(self) -> PromptComponent:
        from loom_engine.memory.prompt import memory_component

        return memory_component(self.folder)


def project_memory(workspace_root: Path, chosen: MemorySettings, redactor: Redactor | None) -> ProjectMemory | None:
    """The memory of the project ``workspace_root`` is part of; None when turned off."""
    if not chosen.enabled:
        return None
    from loom_engine.memory.folder import MemoryFolder

    return ProjectMemory(MemoryFolder.for_project(workspace_root, redactor=redactor))


def without_memory_tools(tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
    return [tool for tool in tools if tool.name not in MEMORY_TOOL_NAMES]
