"""The project's long-term memory for one Loom process, per the ``[memory]`` settings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loom_engine.memory.entries import MemoryOperationError
from loom_engine.memory.folder import MemoryFolder

if TYPE_CHECKING:
    from loom_engine.agent import Agent
    from loom_engine.context.assembler import PromptComponent
    from loom_engine.memory.promotion import Proposal
    from loom_engine.redact import Redactor
    from loom_engine.tools.base import Tool

    from .settings import MemorySettings

# The tools that exist only with memory on.
MEMORY_TOOL_NAMES = frozenset({"memory", "recall"})


@dataclass(frozen=True)
class ProjectMemory:
    folder: MemoryFolder

    def prompt_component(self) -> PromptComponent:
        from loom_engine.memory.prompt import memory_component

        return memory_component(self.folder)


def project_memory(workspace_root: Path, chosen: MemorySettings, redactor: Redactor | None) -> ProjectMemory | None:
    """The memory of the project ``workspace_root`` is part of; None when turned off."""
    if not chosen.enabled:
        return None
    return ProjectMemory(MemoryFolder.for_project(workspace_root, redactor=redactor))


def with_recall_by_meaning(tools: Sequence[Tool[Any]], chosen: MemorySettings) -> list[Tool[Any]]:
    """The tools, recall given the embeddings endpoint the user configured (if any)."""
    if not chosen.embeddings_url:
        return list(tools)
    import os

    from builtin_tools.recall import Embeddings, RecallTool

    key = os.environ.get(chosen.embeddings_key_env, "")
    embeddings = Embeddings(chosen.embeddings_url, chosen.embeddings_model, key)
    return [RecallTool(embeddings) if tool.name == "recall" else tool for tool in tools]


def without_memory_tools(tools: Sequence[Tool[Any]]) -> list[Tool[Any]]:
    return [tool for tool in tools if tool.name not in MEMORY_TOOL_NAMES]


async def proposals_of(agent: Agent, folder: MemoryFolder) -> list[Proposal]:
    """What the session in ``agent`` proposes to remember ([] when it had no substance
    or the request failed: a proposal is never worth an error at exit)."""
    from loom_engine.memory.promotion import propose
    from loom_engine.providers.base import ProviderError

    try:
        return await propose(agent.provider, agent.client.model, agent.messages, folder.index_text())
    except (ProviderError, OSError, MemoryOperationError):
        return []


def session_proposer(agent: Agent, chosen: MemorySettings) -> Callable[[], Awaitable[list[Proposal]]] | None:
    """What asks, at a chat session's end, which facts of ``agent``'s session to keep;
    None when ``[memory] promote`` is off."""
    folder = _global_folder(agent)
    if not chosen.enabled or not chosen.promote or folder is None:
        return None
    return lambda: proposals_of(agent, folder)


def _global_folder(agent: Agent) -> MemoryFolder | None:
    store = agent.parts.memory
    return store if isinstance(store, MemoryFolder) else None


def propose_after_headless(agent: Agent, chosen: MemorySettings, err: TextIO) -> None:
    """A headless run's proposals, written to the memory folder's proposals file for the
    user to review (never applied here); one line on ``err`` saying where."""
    if not chosen.enabled or not chosen.promote or agent.session_id is None:
        return
    import asyncio

    from loom_engine.memory.promotion import save_proposals

    folder = _global_folder(agent)
    if folder is None:
        return
    proposals = asyncio.run(proposals_of(agent, folder))
    if proposals:
        path = save_proposals(folder, agent.session_id, proposals)
        err.write(f"loom: {len(proposals)} memory proposal{'s' if len(proposals) != 1 else ''} saved to {path} "
                  "(review: loom memory proposals)\n")
