"""Without git: the files Loom's edit tools changed can still be put back (their
pre-images), a change from outside since is a conflict, and the restore can be undone."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_cli.bootstrap import make_checkpointer
from loom_cli.settings import SnapshotSettings
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.snapshots.model import RewindMode
from loom_engine.snapshots.preimages import PreimageCheckpointer, edited_paths
from loom_engine.snapshots.restore import restore_points
from loom_engine.snapshots.rewind import plan_for, plan_undo, rewind, undo_rewind
from loom_engine.workspace import Workspace


def test_without_git_the_fallback_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    assert isinstance(make_checkpointer(tmp_path, SnapshotSettings()), PreimageCheckpointer)
    assert make_checkpointer(tmp_path, SnapshotSettings(enabled=False)) is None


def test_the_paths_an_edit_tool_names() -> None:
    patch = ("*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** Add File: c.py\n+z\n"
             "*** End Patch")
    assert edited_paths("apply_patch", {"patch": patch}) == ("a.py", "b.py", "c.py")
    assert edited_paths("write_file", {"path": "d.py", "content": ""}) == ("d.py",)
    assert edited_paths("bash", {"command": "rm -rf /"}) == ()


async def test_files_changed_by_edit_tools_are_restored_and_the_rest_is_left(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("original\n")
    (workspace / "b.txt").write_text("by bash\n")
    checkpointer = PreimageCheckpointer(workspace, tmp_path / "snapshots")
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=ScriptedProvider([
        {"tool_calls": [{"name": "read_file", "input": {"path": "a.txt"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "a.txt", "old_string": "original",
                                                        "new_string": "edited"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "new.txt", "content": "new\n"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "echo changed > b.txt"}}]},
        {"text": "done"},
    ]), tools=default_tools(), workspace=Workspace.at(workspace), checkpoints=checkpointer))
    [e async for e in agent.run("edit things")]
    point = restore_points(checkpointer, agent.messages)[0]
    assert point.files_changed == ("a.txt", "new.txt")
    plan = plan_for(checkpointer, point)
    assert {c.path: (c.action, c.conflict) for c in plan.changes} == {"a.txt": ("modify", False),
                                                                      "new.txt": ("delete", False)}
    outcome = rewind(agent.transcript, checkpointer, point, RewindMode.CODE, plan=plan)
    assert (workspace / "a.txt").read_text() == "original\n" and not (workspace / "new.txt").exists()
    assert (workspace / "b.txt").read_text() == "changed\n"  # bash's change is not known here
    assert outcome.restore is not None
    undo = plan_undo(checkpointer, outcome.restore.undo.id)
    assert undo is not None and not undo.conflicts
    undo_rewind(agent.transcript, checkpointer, undo_snapshot=outcome.restore.undo.id, previous=None, plan=undo)
    assert (workspace / "a.txt").read_text() == "edited\n" and (workspace / "new.txt").read_text() == "new\n"


async def test_a_file_changed_outside_loom_since_is_a_conflict(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    checkpointer = PreimageCheckpointer(workspace, tmp_path / "snapshots")
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=ScriptedProvider([
        {"tool_calls": [{"name": "write_file", "input": {"path": "n.txt", "content": "loom\n"}}]},
        {"text": "done"},
    ]), tools=default_tools(), workspace=Workspace.at(workspace), checkpoints=checkpointer))
    [e async for e in agent.run("write")]
    (workspace / "n.txt").write_text("loom\nthe user\n")
    plan = plan_for(checkpointer, restore_points(checkpointer, agent.messages)[0])
    assert [(c.path, c.conflict) for c in plan.changes] == [("n.txt", True)]
    rewind(agent.transcript, checkpointer, restore_points(checkpointer, agent.messages)[0], RewindMode.CODE)
    assert (workspace / "n.txt").read_text() == "loom\nthe user\n"


async def test_a_copy_that_cannot_be_kept_does_not_stop_the_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    blocked = tmp_path / "snapshots"
    blocked.write_text("a file where the folder should be")
    checkpointer = PreimageCheckpointer(workspace, blocked)
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=ScriptedProvider([
        {"tool_calls": [{"name": "write_file", "input": {"path": "n.txt", "content": "x\n"}}]},
        {"text": "done"},
    ]), tools=default_tools(), workspace=Workspace.at(workspace), checkpoints=checkpointer))
    events = [e async for e in agent.run("write")]
    assert events[-1].type == "finished" and (workspace / "n.txt").exists()
    assert checkpointer.last_failure is not None
