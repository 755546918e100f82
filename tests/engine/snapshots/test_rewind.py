"""rewind() on a live agent: code and conversation, conversation only, code only; the
model is told in its next request which files were reverted; undo puts both back."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.snapshots.checkpoints import Checkpointer
from loom_engine.snapshots.model import RewindMode
from loom_engine.snapshots.restore import restore_points, snapshots_of
from loom_engine.snapshots.rewind import RewindError, plan_for, rewind, undo_rewind
from loom_engine.workspace import Workspace


async def _worked(tmp_path: Path, extra: list[dict]) -> tuple[Agent, Checkpointer, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("original\n")
    checkpointer = Checkpointer(workspace, tmp_path / "snapshots")
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=ScriptedProvider([
        {"tool_calls": [{"name": "bash", "input": {"command": "echo changed > a.txt && echo x > made.txt"}}]},
        {"text": "first done"},
        {"tool_calls": [{"name": "bash", "input": {"command": "echo again >> a.txt"}}]},
        {"text": "second done"},
        *extra,
    ], record_requests=True), tools=default_tools(), workspace=Workspace.at(workspace), checkpoints=checkpointer))
    [e async for e in agent.run("first")]
    [e async for e in agent.run("second")]
    return agent, checkpointer, workspace


async def test_code_and_conversation(tmp_path: Path) -> None:
    agent, checkpointer, workspace = await _worked(tmp_path, [])
    assert snapshots_of(agent.checkpoints) is checkpointer and snapshots_of(None) is None
    point = restore_points(checkpointer, agent.messages)[0]
    plan = plan_for(checkpointer, point)
    assert {c.path: c.action for c in plan.changes} == {"a.txt": "modify", "made.txt": "delete"}
    outcome = rewind(agent.transcript, checkpointer, point, RewindMode.BOTH, plan=plan)
    assert (workspace / "a.txt").read_text() == "original\n" and not (workspace / "made.txt").exists()
    assert outcome.prompt_text == "first"
    assert [m.meta.get("reminder") for m in agent.messages] == [True]  # only the note for the model
    assert "made.txt: deleted" in agent.messages[0].text
    undo = undo_rewind(agent.transcript, checkpointer, undo_snapshot=outcome.restore.undo.id,  # type: ignore[union-attr]
                       previous=outcome.previous)
    assert undo.conversation_restored and (workspace / "a.txt").read_text() == "changed\nagain\n"
    assert [p.text for p in restore_points(checkpointer, agent.messages)] == ["first", "second"]


async def test_conversation_only_leaves_the_files(tmp_path: Path) -> None:
    agent, checkpointer, workspace = await _worked(tmp_path, [])
    point = restore_points(checkpointer, agent.messages)[1]
    outcome = rewind(agent.transcript, checkpointer, point, RewindMode.CONVERSATION)
    assert outcome.restore is None and outcome.reminder is None
    assert (workspace / "a.txt").read_text() == "changed\nagain\n"
    assert [p.text for p in restore_points(checkpointer, agent.messages)] == ["first"]


async def test_code_only_tells_the_model_in_the_next_request(tmp_path: Path) -> None:
    agent, checkpointer, workspace = await _worked(tmp_path, [{"text": "noted"}])
    point = restore_points(checkpointer, agent.messages)[1]
    rewind(agent.transcript, checkpointer, point, RewindMode.CODE)
    assert (workspace / "a.txt").read_text() == "changed\n"
    assert [p.text for p in restore_points(checkpointer, agent.messages)] == ["first", "second"]
    [e async for e in agent.run("what changed?")]
    sent = agent.provider.requests[-1]  # type: ignore[attr-defined]
    assert "a.txt: restored" in str(sent.messages)


async def test_code_without_a_snapshot_is_refused(tmp_path: Path) -> None:
    agent, checkpointer, _ = await _worked(tmp_path, [])
    point = restore_points(None, agent.messages)[0]
    with pytest.raises(RewindError, match="only the conversation can be rewound"):
        rewind(agent.transcript, checkpointer, point, RewindMode.BOTH)
    assert len(restore_points(checkpointer, agent.messages)) == 2
