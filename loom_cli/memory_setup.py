"""The project's long-term memory for one Loom process, per the ``[memory]`` settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loom_engine.memory.entries import MemoryOperationError
from loom_engine.memory.folder import MemoryFolder

if TYPE_CHECKING:
    from loom_engine.agent import Agent
    from loom_engine.context.assembler import PromptComponent
    from loom_engine.memory.promotion import Proposal
    from loom_engine.messages import Message
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


class SessionPromoter:
    """What a session proposes to keep in the project's long-term memory: read at each
    compaction (the history about to be summarised, while the summary is made; held until
    the session's end) and at the session's end. A failed request proposes nothing: a
    proposal is never worth an error."""

    def __init__(self, folder: MemoryFolder) -> None:
        self.folder = folder
        self._agent: Agent | None = None
        self._held: list[Proposal] = []  # from compactions, not yet offered
        self._kept: Path | None = None  # the session's proposals file, while it holds what is unanswered

    def attach(self, agent: Agent) -> None:
        """The agent whose provider and model make the requests (built after its parts)."""
        self._agent = agent

    async def before_compaction(self, messages: Sequence[Message]) -> None:
        self._held = _merged(self._held, await self._propose(messages))
        self._keep(self._held)

    def _keep(self, proposals: Sequence[Proposal]) -> None:
        """``proposals`` in the session's proposals file as well, until the user answers
        the offer: a chat that is killed (or crashes) leaves them for `loom memory
        proposals` rather than losing what it read before its compactions."""
        from loom_engine.memory.promotion import save_proposals

        session_id = self._agent.session_id if self._agent is not None else None
        if not proposals or session_id is None:
            return
        try:
            self._kept = save_proposals(self.folder, session_id, proposals)
        except (OSError, MemoryOperationError):
            return  # they are still offered at the session's end

    @property
    def holds(self) -> bool:
        """Whether compactions left proposals to offer."""
        return bool(self._held)

    async def proposals(self) -> list[Proposal]:
        """All there is to offer now: what compactions held and what the session's end
        proposes; the held ones are handed over (not offered twice). They stay in the
        session's proposals file until `answered`: a chat killed while it asks loses none."""
        messages = self._agent.messages if self._agent is not None else ()
        found = _merged(self._held, await self._propose(messages))
        self._held = []
        self._keep(found)
        return found

    @property
    def unanswered_file(self) -> Path | None:
        """The session's proposals file while it holds proposals the user has not answered."""
        return self._kept

    def answered(self) -> None:
        """The user answered the offer (apply, pick or skip): the file has done its job."""
        if self._kept is not None:
            from loom_engine.memory.promotion import discard_proposals

            discard_proposals(self.folder, self._kept.stem)
            self._kept = None

    async def _propose(self, messages: Sequence[Message]) -> list[Proposal]:
        from loom_engine.memory.promotion import propose
        from loom_engine.providers.base import ProviderError

        if self._agent is None:
            return []
        try:
            return await propose(self._agent.provider, self._agent.client.model, messages, self.folder.index_text())
        except (ProviderError, OSError, MemoryOperationError):
            return []


def _merged(first: Sequence[Proposal], more: Sequence[Proposal]) -> list[Proposal]:
    seen = {(proposal.path, proposal.text) for proposal in first}
    return [*first, *(proposal for proposal in more if (proposal.path, proposal.text) not in seen)]


def session_promoter(memory: ProjectMemory | None, chosen: MemorySettings, *, chat: bool,
                     headless: bool) -> SessionPromoter | None:
    """The promoter ``[memory] promote`` asks for: "chat" (the default) in the chat only,
    "always" in a headless run that saves proposals too, "off" nowhere."""
    wanted = chosen.promote == "always" or (chosen.promote == "chat" and chat)
    if memory is None or not wanted or not (chat or headless):
        return None
    return SessionPromoter(memory.folder)


async def save_headless_proposals(promoter: SessionPromoter | None, err: TextIO) -> None:
    """A headless run's proposals, left in the session's proposals file for the user to
    review (never applied here); one line on ``err`` saying where."""
    if promoter is None:
        return
    proposals = await promoter.proposals()  # written to the file as they are made
    if not proposals:
        return
    count = f"{len(proposals)} memory proposal{'s' if len(proposals) != 1 else ''}"
    if promoter.unanswered_file is None:
        err.write(f"loom: {count} could not be saved to {promoter.folder.proposals_dir}\n")
        return
    err.write(f"loom: {count} saved to {promoter.unanswered_file} (review: loom memory proposals)\n")
