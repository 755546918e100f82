"""Promotion: what a session learned, proposed for long-term memory — read at each
compaction (from the history about to be summarised) and at the session's end; which
runs propose is the ``[memory] promote`` setting's ("chat" by default)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loom_cli.memory_setup import ProjectMemory, SessionPromoter, save_headless_proposals, session_promoter
from loom_cli.settings import MemorySettings
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import CompactionApplied
from loom_engine.memory.folder import MemoryFolder
from loom_engine.memory.promotion import PROMOTION_SYSTEM, Proposal, load_proposals
from loom_engine.messages import Message, TextPart
from loom_engine.parts import AgentParts
from loom_engine.providers.base import ProviderRequest
from loom_engine.providers.scripted import ScriptedProvider, Turn
from loom_engine.sessions.store import SessionStore
from loom_engine.transcript import SessionLog
from loom_engine.workspace import Workspace

EARLY = [Message.user("How do we deploy the staging box? " * 20),
         Message.assistant(TextPart("Deploys go through the VPN with make deploy-staging. " * 20)),
         Message.user("And the tests?"), Message.assistant(TextPart("pytest -n 2, always from the root. " * 10))]


def _answers(proposals_by_call: list[list[dict[str, str]]]) -> tuple[ScriptedProvider, list[ProviderRequest]]:
    """A provider answering promotion requests with the next proposals, anything else
    (the compaction's summary) with a summary; the promotion requests, kept."""
    asked: list[ProviderRequest] = []

    def answer(request: ProviderRequest, index: int) -> Turn:
        if request.system == PROMOTION_SYSTEM:
            asked.append(request)
            return {"text": json.dumps({"proposals": proposals_by_call[len(asked) - 1]})}
        return {"text": "## Goal\nDeploy and test.\n## Progress\nAnswered how to deploy. " * 10}

    return ScriptedProvider(answer), asked


def _agent(tmp_path: Path, provider: ScriptedProvider, promoter: SessionPromoter,
           session: SessionLog | None = None) -> Agent:
    workspace = Workspace.at(tmp_path)
    agent = Agent(AgentConfig(model="m", provider="scripted"),
                  AgentParts(provider=provider, workspace=workspace, memory=promoter.folder,
                             before_compaction=promoter.before_compaction),
                  session=session, messages=list(EARLY), system_prompt="s")
    promoter.attach(agent)
    return agent


async def test_a_compaction_proposes_from_the_history_it_summarises(tmp_path: Path) -> None:
    folder = MemoryFolder(tmp_path / "memory")
    promoter = SessionPromoter(folder)
    provider, asked = _answers([[{"text": "- Deploys go through the VPN."}],
                                [{"text": "- Deploys go through the VPN."}, {"text": "- Run pytest from the root."}]])
    agent = _agent(tmp_path, provider, promoter)
    events = [event async for event in agent.compact()]
    assert any(isinstance(event, CompactionApplied) for event in events)
    assert "VPN with make deploy-staging" not in str(agent.messages)  # summarised away...
    [at_compaction] = asked
    assert "VPN with make deploy-staging" in str(at_compaction.messages)  # ...after the proposal read it
    assert promoter.holds and folder.list() == []  # held to be offered, never applied by itself

    async for _ in agent.run("Where do the logs of the staging box go? " * 20):
        pass  # the session goes on after the compaction
    offered = await promoter.proposals()  # the session's end: held first, the end's new ones after
    assert offered == [Proposal("MEMORY.md", "- Deploys go through the VPN."),
                       Proposal("MEMORY.md", "- Run pytest from the root.")]
    assert len(asked) == 2 and not promoter.holds


async def test_held_proposals_outlive_a_chat_killed_before_its_end(tmp_path: Path) -> None:
    """Kept in the session's proposals file while held and while offered (a chat killed
    before its end or during the offer leaves them for `loom memory proposals`); the file
    goes once the user answers."""
    folder = MemoryFolder(tmp_path / "memory")
    promoter = SessionPromoter(folder)
    provider, _ = _answers([[{"text": "- Deploys go through the VPN."}], []])
    session = SessionStore(tmp_path / "sessions").create(tmp_path, provider="scripted", model="m")
    agent = _agent(tmp_path, provider, promoter, session=session)
    [event async for event in agent.compact()]
    assert load_proposals(folder) == [(session.id, [Proposal("MEMORY.md", "- Deploys go through the VPN.")])]
    assert await promoter.proposals() == [Proposal("MEMORY.md", "- Deploys go through the VPN.")]
    assert load_proposals(folder) == [(session.id, [Proposal("MEMORY.md", "- Deploys go through the VPN.")])]
    promoter.answered()
    assert load_proposals(folder) == [] and folder.list() == []


async def test_a_failed_proposal_never_fails_the_compaction(tmp_path: Path) -> None:
    def answer(request: ProviderRequest, index: int) -> Turn | None:
        if request.system == PROMOTION_SYSTEM:
            return None  # the scripted provider's error: the request failed
        return {"text": "## Goal\nDeploy.\n" * 20}

    promoter = SessionPromoter(MemoryFolder(tmp_path / "memory"))
    agent = _agent(tmp_path, ScriptedProvider(answer), promoter)
    events = [event async for event in agent.compact()]
    assert any(isinstance(event, CompactionApplied) for event in events) and not promoter.holds


@pytest.mark.parametrize(("setting", "chat", "headless", "wanted"), [
    ("chat", True, False, True), ("chat", False, True, False), ("chat", False, False, False),
    ("always", False, True, True), ("always", False, False, False), ("off", True, True, False)])
def test_which_runs_propose(tmp_path: Path, setting: str, chat: bool, headless: bool, wanted: bool) -> None:
    memory = ProjectMemory(MemoryFolder(tmp_path))
    chosen = MemorySettings.model_validate({"promote": setting})
    assert (session_promoter(memory, chosen, chat=chat, headless=headless) is not None) is wanted
    assert session_promoter(None, chosen, chat=True, headless=True) is None  # memory off: none


def test_the_setting_defaults_to_the_chat_and_takes_true_and_false() -> None:
    assert MemorySettings().promote == "chat"
    assert MemorySettings.model_validate({"promote": True}).promote == "always"
    assert MemorySettings.model_validate({"promote": False}).promote == "off"
    with pytest.raises(ValueError, match="promote"):
        MemorySettings.model_validate({"promote": "sometimes"})


async def test_a_headless_run_writes_a_proposals_file_never_the_memory(tmp_path: Path) -> None:
    folder = MemoryFolder(tmp_path / "memory")
    session = SessionStore(tmp_path / "sessions").create(tmp_path, provider="scripted", model="m")
    provider, _ = _answers([[{"path": "MEMORY.md", "text": "- key: sk-ant-api03-" + "Ab1" * 20}]])
    promoter = SessionPromoter(folder)
    _agent(tmp_path, provider, promoter, session=session)
    err = io.StringIO()
    await save_headless_proposals(promoter, err)
    assert f"1 memory proposal saved to {folder.proposals_dir / (session.id + '.json')}" in err.getvalue()
    [(session_id, [proposal])] = load_proposals(folder)
    assert session_id == session.id and proposal.text.startswith("- key: ") and "sk-ant" not in proposal.text
    assert folder.list() == []  # proposed, never applied
    session.close()
