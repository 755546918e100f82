"""Issue 19, item 13: rewind when a snapshotted folder has become a link.

A prompt changes `src/app.py` and `sub/a.txt`; then `sub` is replaced by a link — to a
folder outside the workspace holding its own `a.txt`, or to another folder of the
workspace. `loom rewind` crashed with ShadowError (git refuses a path behind a link).
Now the path behind the link is refused with its reason in the preview, the rest is
restored, and nothing is read or written through the link.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_cli.rewind_command import RewindRequest, run_rewind
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.paths import data_dir, sessions_dir
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.sessions.store import SessionStore
from loom_engine.snapshots.checkpoints import Checkpointer
from loom_engine.snapshots.model import SnapshotCaps
from loom_engine.snapshots.preimages import PreimageCheckpointer
from loom_engine.snapshots.restore import apply_restore, plan_restore
from loom_engine.workspace import Workspace
from tests.doubles.loom_command import LOOM_SCRIPT, isolate_loom

ROOT = Path(__file__).resolve().parents[2]
REASON = "sub is no longer a folder (a link or a file stands there); nothing is written through it"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_loom(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "src").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "src" / "app.py").write_text("v1\n")
    (root / "sub" / "a.txt").write_text("v1\n")
    return Path(os.path.realpath(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "a.txt").write_text("the outside file\n")
    return Path(os.path.realpath(folder))


async def _session(root: Path, *commands: str) -> None:
    """One prompt per command, each run by the assistant's bash, snapshots as the chat takes them."""
    writer = SessionStore(sessions_dir()).create(root, provider="scripted", model="scripted")
    replies: list[dict[str, object]] = []
    for command in commands:
        replies += [{"tool_calls": [{"name": "bash", "input": {"command": command}}]}, {"text": "done"}]
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=ScriptedProvider(replies), tools=default_tools(), workspace=Workspace.at(root),
                             checkpoints=Checkpointer(root, data_dir() / "snapshots")), session=writer)
    for number in range(len(commands)):
        [e async for e in agent.run(f"prompt {number + 1}")]
    writer.close()


def _relink(root: Path, target: Path) -> None:
    """What happens outside Loom (a user, another program): `sub` becomes a link."""
    for name in os.listdir(root / "sub"):
        os.unlink(root / "sub" / name)
    os.rmdir(root / "sub")
    os.symlink(target, root / "sub")


async def test_a_folder_replaced_by_a_link_outside_is_refused_and_the_rest_restored(
        repo: Path, outside: Path) -> None:
    await _session(repo, "echo v2 > src/app.py && echo v2 > sub/a.txt")
    _relink(repo, outside)

    code, preview = run_rewind(RewindRequest(cwd=repo, to=1))
    assert code == 0, preview
    assert "restore   src/app.py" in preview
    assert f"keep      sub/a.txt  (left alone: {REASON})" in preview
    assert "the outside file" not in preview  # nothing was read through the link

    code, out = run_rewind(RewindRequest(cwd=repo, to=1, yes=True, json_output=True))
    result = json.loads(out)
    assert code == 0, out
    assert result["restored"] == ["src/app.py"] and result["errors"] == []
    assert (repo / "src" / "app.py").read_text() == "v1\n"
    assert (outside / "a.txt").read_text() == "the outside file\n"
    assert os.path.islink(repo / "sub")  # not the assistant's: left as it is


async def test_a_link_into_the_workspace_is_not_written_through_either(repo: Path) -> None:
    (repo / "other").mkdir()
    (repo / "other" / "a.txt").write_text("other's own\n")
    await _session(repo, "echo v2 > src/app.py && echo v2 > sub/a.txt")
    _relink(repo, repo / "other")
    code, out = run_rewind(RewindRequest(cwd=repo, to=1, yes=True, json_output=True))
    assert code == 0, out
    assert json.loads(out)["restored"] == ["src/app.py"]
    assert (repo / "other" / "a.txt").read_text() == "other's own\n"


async def test_a_link_the_assistant_made_is_removed_and_the_folder_comes_back(repo: Path, outside: Path) -> None:
    await _session(repo, "echo v2 > src/app.py && echo v2 > sub/a.txt",
                   f"rm -r sub && ln -s {outside} sub")
    code, out = run_rewind(RewindRequest(cwd=repo, to=1, yes=True, json_output=True))
    assert code == 0, out
    assert sorted(json.loads(out)["restored"]) == ["src/app.py", "sub", "sub/a.txt"]
    assert (repo / "sub").is_dir() and not (repo / "sub").is_symlink()
    assert (repo / "sub" / "a.txt").read_text() == "v1\n"
    assert (outside / "a.txt").read_text() == "the outside file\n"


async def test_loom_rewind_on_the_command_line_says_it_in_one_line(repo: Path, outside: Path,
                                                                     tmp_path: Path) -> None:
    await _session(repo, "echo v2 > src/app.py && echo v2 > sub/a.txt")
    _relink(repo, outside)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*LOOM_SCRIPT, "rewind", "--to", "1", "--yes"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "Files: 1 restored" in done.stdout
    assert (repo / "src" / "app.py").read_text() == "v1\n"
    assert (outside / "a.txt").read_text() == "the outside file\n"


async def test_without_git_the_pre_images_are_not_read_or_written_through_a_link(repo: Path, outside: Path) -> None:
    keeper = PreimageCheckpointer(repo, data_dir() / "snapshots", caps=SnapshotCaps())
    await keeper.before_prompt("s1", "p1", "edit")
    (target,) = keeper.snapshots()
    for path in ("src/app.py", "sub/a.txt"):  # as the engine calls it around write_file
        await keeper.before_tool("write_file", {"path": path})
        (repo / path).write_text("v2\n")
        await keeper.after_tool("write_file", {"path": path})
    _relink(repo, outside)

    plan = plan_restore(keeper, target)
    by_path = {change.path: change for change in plan.changes}
    assert by_path["sub/a.txt"].blocked == REASON
    assert by_path["src/app.py"].blocked is None
    blobs = [p.read_bytes() for p in (keeper.folder / "blobs").iterdir()]
    assert b"the outside file\n" not in blobs  # never copied into Loom's data
    result = apply_restore(keeper, plan)
    assert [c.path for c in result.restored] == ["src/app.py"] and result.errors == ()
    assert (outside / "a.txt").read_text() == "the outside file\n"
