"""`loom rewind` in-process (and its command line): the list, the preview that changes
nothing, code or conversation only, a session in use, and the errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_cli.rewind_command import RewindCommandError, RewindRequest, run_rewind
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.paths import data_dir, sessions_dir
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.sessions.store import SessionStore
from loom_engine.snapshots.checkpoints import Checkpointer
from loom_engine.snapshots.model import RewindMode
from loom_engine.workspace import Workspace, find_workspace_root
from tests.doubles.loom_command import LOOM_SCRIPT, isolate_loom

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_loom(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "app.py").write_text("print('v1')\n")
    return root


async def _session(root: Path, *, keep_open: bool = False) -> tuple[str, object]:
    """Two prompts: the first changes app.py and makes new.txt, the second only talks."""
    workspace = find_workspace_root(root)
    writer = SessionStore(sessions_dir()).create(workspace, provider="scripted", model="scripted")
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=ScriptedProvider([
        {"tool_calls": [{"name": "bash", "input": {"command": "echo \"print('v2')\" > app.py && echo n > new.txt"}}]},
        {"text": "changed"},
        {"text": "just talking"},
    ]), tools=default_tools(), workspace=Workspace.at(workspace),
                             checkpoints=Checkpointer(workspace, data_dir() / "snapshots")), session=writer)
    [e async for e in agent.run("update the app")]
    [e async for e in agent.run("thanks")]
    if not keep_open:
        writer.close()
    return writer.id, writer


def _messages(session_id: str) -> list[str]:
    return [m.text for m in SessionStore(sessions_dir()).load(session_id).messages]


async def test_the_list_names_each_prompt_and_its_files(repo: Path) -> None:
    await _session(repo)
    code, text = run_rewind(RewindRequest(cwd=repo, list_points=True))
    assert code == 0
    lines = text.splitlines()
    assert lines[1].startswith("   1  ") and lines[1].endswith("update the app  (2 files changed)")
    assert lines[2:4] == ["        app.py", "        new.txt"]
    assert lines[4].endswith("thanks  (no file changed)")


async def test_the_preview_changes_nothing(repo: Path) -> None:
    session_id, _ = await _session(repo)
    code, text = run_rewind(RewindRequest(cwd=repo, to=1))
    assert code == 0
    assert "restore   app.py" in text and "delete    new.txt  (created since)" in text
    assert "-print('v2')\n+print('v1')" in text
    assert "Conversation: 6 messages -> 0" in text
    assert text.endswith("Nothing was changed: add --yes to rewind.")
    assert (repo / "new.txt").exists() and len(_messages(session_id)) == 6


async def test_conversation_only_leaves_the_files(repo: Path) -> None:
    session_id, _ = await _session(repo)
    code, out = run_rewind(RewindRequest(cwd=repo, to=2, mode=RewindMode.CONVERSATION, yes=True,
                                         json_output=True))
    assert code == 0 and json.loads(out)["restored"] == []
    messages = _messages(session_id)
    assert len(messages) == 4 and messages[0] == "update the app" and messages[-1] == "changed"
    assert (repo / "app.py").read_text() == "print('v2')\n"


async def test_code_only_keeps_the_conversation_and_adds_the_note(repo: Path) -> None:
    session_id, _ = await _session(repo)
    code, out = run_rewind(RewindRequest(cwd=repo, to=1, mode=RewindMode.CODE, yes=True))
    assert code == 0, out
    assert (repo / "app.py").read_text() == "print('v1')\n" and not (repo / "new.txt").exists()
    messages = _messages(session_id)
    assert "thanks" in messages and "app.py: restored" in messages[-1]
    assert "To undo: loom rewind --undo --yes" in out


async def test_a_session_in_use_is_refused_and_nothing_changes(repo: Path) -> None:
    _, writer = await _session(repo, keep_open=True)
    try:
        with pytest.raises(RewindCommandError, match=r"in use by another loom .*rewind it there with /rewind"):
            run_rewind(RewindRequest(cwd=repo, to=1, yes=True))
    finally:
        writer.close()  # type: ignore[attr-defined]
    assert (repo / "app.py").read_text() == "print('v2')\n"


async def test_errors_are_one_line(repo: Path) -> None:
    with pytest.raises(RewindCommandError, match="no session in"):
        run_rewind(RewindRequest(cwd=repo, list_points=True))
    await _session(repo)
    with pytest.raises(RewindCommandError, match=r"no prompt 5 in session .* \(it has 2; see loom rewind --list\)"):
        run_rewind(RewindRequest(cwd=repo, to=5))
    with pytest.raises(RewindCommandError, match="has no rewind to undo"):
        run_rewind(RewindRequest(cwd=repo, undo=True))
    with pytest.raises(RewindCommandError, match="no session 'nope'"):
        run_rewind(RewindRequest(cwd=repo, session_id="nope", list_points=True))


def test_the_command_line_refuses_contradictions(repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    both = subprocess.run([*LOOM_SCRIPT, "rewind", "--to", "1", "--code", "--conversation"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and both.stderr.startswith("loom: use --code or --conversation, not both")
    none = subprocess.run([*LOOM_SCRIPT, "rewind"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)
    assert none.returncode == 2 and none.stderr == "loom: give one of --to N, --list or --undo\n"


async def test_a_session_named_from_another_folder_rewinds_its_own_workspace(repo: Path, tmp_path: Path) -> None:
    session_id, _ = await _session(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, _ = run_rewind(RewindRequest(cwd=elsewhere, session_id=session_id, to=1, mode=RewindMode.CODE, yes=True))
    assert code == 0
    assert (repo / "app.py").read_text() == "print('v1')\n" and not (repo / "new.txt").exists()
