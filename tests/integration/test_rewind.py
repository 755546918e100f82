"""Rewind end to end: `loom run` against the fake LLM server in a git repository with
uncommitted, staged and untracked changes (and a stash), then `loom rewind`.

The model edits a file with edit_file, changes another with `sed -i`, creates and
deletes files through bash, and a sub-agent edits a third. `loom rewind --to 1 --yes`
puts every file back as it was before prompt 1, leaves the user's repository (index,
refs, stash, config, untracked files — a 100 MB one too) byte for byte as it was, and
`loom rewind --undo --yes` brings the assistant's changes back. A file the user edited
after the snapshot is reported as a conflict and left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM_SCRIPT

ROOT = Path(__file__).resolve().parents[2]
BIG = 100 * 1024 * 1024

pytestmark = pytest.mark.timeout(300)


def _git(repo: Path, *args: str) -> str:
    # --no-optional-locks: the test's own `git status` must not refresh the index it compares.
    return subprocess.run(["git", "--no-optional-locks", "-c", "user.name=u", "-c", "user.email=u@x", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a commit, a stash, a staged change, uncommitted edits, untracked
    files (one of 100 MB, sparse) and an ignored folder."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "a.py").write_text("def greet():\n    return 'hello'\n")
    (root / "b.txt").write_text("colour: red\nsize: big\n")
    (root / "c.md").write_text("# Notes\n\nfirst draft\n")
    (root / "d.txt").write_text("to be deleted\n")
    (root / "staged.txt").write_text("v1\n")
    (root / ".gitignore").write_text("build/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "first")
    (root / "staged.txt").write_text("v1\nstash me\n")
    _git(root, "stash", "-q")
    (root / "staged.txt").write_text("v2 staged\n")
    _git(root, "add", "staged.txt")
    (root / "a.py").write_text("def greet():\n    return 'hello'\n\n# uncommitted\n")
    (root / "untracked.txt").write_text("the user's own notes\n")
    with open(root / "huge.bin", "wb") as handle:
        handle.truncate(BIG)
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\x7fELF ignored")
    return root


def _env(tmp_path: Path, server: FakeLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_", "GIT_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               LOOM_DATA_DIR=str(tmp_path / "data"), LOOM_CONFIG_DIR=str(tmp_path / "config"),
               LOOM_PROVIDER="anthropic", LOOM_MODEL="claude-sonnet-4-6",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    return env


def _loom(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOM_SCRIPT, *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=240)


def _files(repo: Path) -> dict[str, str]:
    """Every file of the work tree (not .git) -> hash; the huge one by size only (never read)."""
    found: dict[str, str] = {}
    for folder, dirs, names in os.walk(repo):
        dirs[:] = [d for d in dirs if not (folder == str(repo) and d == ".git")]
        for name in names:
            path = Path(folder) / name
            rel = str(path.relative_to(repo))
            found[rel] = f"size {path.stat().st_size}" if rel == "huge.bin" else \
                hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _dot_git(repo: Path) -> dict[str, str]:
    """Every file of the user's .git (index, refs, stash, config, objects) -> hash."""
    found: dict[str, str] = {}
    for folder, _, names in os.walk(repo / ".git"):
        for name in names:
            path = Path(folder) / name
            found[str(path.relative_to(repo))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _first_prompt_replies() -> list[Reply]:
    """The model: edit_file on a.py, sed -i on b.txt, files made and removed by bash, a
    sub-agent that edits c.md."""
    return [
        Reply.tool("read_file", {"path": "a.py"}),
        Reply.tool("edit_file", {"path": "a.py", "old_string": "'hello'", "new_string": "'hello, world'"}),
        Reply.tool("bash", {"command": "sed -i 's/red/blue/' b.txt && echo made > made.txt && mkdir -p gen "
                                       "&& echo generated > gen/out.txt && rm d.txt"}),
        Reply.tool("task", {"description": "edit the notes", "prompt": "Change 'first draft' in c.md.",
                            "tools": ["read_file", "edit_file"]}),
        Reply.tool("read_file", {"path": "c.md"}),  # the sub-agent
        Reply.tool("edit_file", {"path": "c.md", "old_string": "first draft", "new_string": "second draft"}),
        Reply.text("c.md edited"),
        Reply.text("all done"),  # the parent
    ]


def _run_prompts(repo: Path, env: dict[str, str], server: FakeLLMServer) -> None:
    server.enqueue(*_first_prompt_replies())
    first = _loom(repo, env, "run", "--permission-mode", "bypass", "make the changes")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "all done"
    server.enqueue(Reply.tool("bash", {"command": "echo 'size: small' >> b.txt && echo more > more.txt"}),
                   Reply.text("more done"))
    second = _loom(repo, env, "run", "--continue", "--permission-mode", "bypass", "a little more")
    assert second.returncode == 0, second.stderr


def test_rewind_restores_every_file_and_never_touches_the_users_repository(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = _env(tmp_path, fake_llm)
    files_before = _files(repo)
    git_before = _dot_git(repo)
    status_before = _git(repo, "status", "--porcelain")
    stash_before = _git(repo, "stash", "list")
    _run_prompts(repo, env, fake_llm)
    changed = _files(repo)
    assert (repo / "a.py").read_text().count("hello, world") == 1
    assert "colour: blue" in (repo / "b.txt").read_text()
    assert "second draft" in (repo / "c.md").read_text()
    assert not (repo / "d.txt").exists() and (repo / "made.txt").exists() and (repo / "gen/out.txt").exists()

    listing = _loom(repo, env, "rewind", "--list", "--output-format", "json")
    assert listing.returncode == 0, listing.stderr
    points = json.loads(listing.stdout)["points"]
    assert [p["prompt"] for p in points] == ["make the changes", "a little more"]
    assert set(points[0]["files_changed"]) == {"a.py", "b.txt", "c.md", "d.txt", "made.txt", "gen/out.txt"}

    preview = _loom(repo, env, "rewind", "--to", "1")
    assert preview.returncode == 0, preview.stderr
    assert "Nothing was changed" in preview.stdout and "delete    made.txt" in preview.stdout
    assert "-colour: blue" in preview.stdout and "+colour: red" in preview.stdout
    assert "Left alone, too big to keep in snapshots: huge.bin (104.9 MB)." in preview.stdout
    assert _files(repo) == changed  # a preview changes nothing

    done = _loom(repo, env, "rewind", "--to", "1", "--yes")
    assert done.returncode == 0, done.stderr + done.stdout
    assert _files(repo) == files_before
    assert _dot_git(repo) == git_before
    assert _git(repo, "status", "--porcelain") == status_before
    assert _git(repo, "stash", "list") == stash_before
    assert os.path.getsize(repo / "huge.bin") == BIG

    # The conversation was rewound too: nothing is left of either prompt.
    listing = json.loads(_loom(repo, env, "rewind", "--list", "--output-format", "json").stdout)
    assert listing["points"] == []

    undo = _loom(repo, env, "rewind", "--undo", "--yes")
    assert undo.returncode == 0, undo.stderr + undo.stdout
    assert _files(repo) == changed
    assert _dot_git(repo) == git_before
    listing = json.loads(_loom(repo, env, "rewind", "--list", "--output-format", "json").stdout)
    assert [p["prompt"] for p in listing["points"]] == ["make the changes", "a little more"]


def test_the_model_is_told_which_files_were_reverted(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = _env(tmp_path, fake_llm)
    _run_prompts(repo, env, fake_llm)
    done = _loom(repo, env, "rewind", "--to", "2", "--code", "--yes")
    assert done.returncode == 0, done.stderr + done.stdout
    assert not (repo / "more.txt").exists() and "size: small" not in (repo / "b.txt").read_text()
    fake_llm.enqueue(Reply.text("noted"))
    again = _loom(repo, env, "run", "--continue", "--permission-mode", "bypass", "what now?")
    assert again.returncode == 0, again.stderr
    sent = json.dumps(fake_llm.requests[-1].body["messages"])
    assert "rewound files" in sent and "more.txt: deleted" in sent and "b.txt: restored" in sent
    assert "cut off" not in sent  # the note is not taken for a turn left unanswered


def test_a_file_changed_by_the_user_since_is_a_conflict_left_alone(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = _env(tmp_path, fake_llm)
    git_before = _dot_git(repo)
    _run_prompts(repo, env, fake_llm)
    (repo / "c.md").write_text("# Notes\n\nsecond draft\nthe user's own line\n")  # in an editor
    (repo / "mine.txt").write_text("made by the user\n")
    preview = _loom(repo, env, "rewind", "--to", "1", "--code", "--output-format", "json")
    files = {f["path"]: f for f in json.loads(preview.stdout)["files"]}
    assert files["c.md"]["conflict"] is True
    assert files["mine.txt"]["blocked"] == "the assistant did not create it"
    assert files["a.py"]["conflict"] is False
    done = _loom(repo, env, "rewind", "--to", "1", "--code", "--yes", "--output-format", "json")
    result = json.loads(done.stdout)
    assert "c.md" in result["skipped"] and "a.py" in result["restored"]
    assert (repo / "c.md").read_text().endswith("the user's own line\n")
    assert (repo / "mine.txt").exists()
    assert "# uncommitted" in (repo / "a.py").read_text() and "hello, world" not in (repo / "a.py").read_text()
    # The next run (which reads `git status` for the system prompt) leaves the index alone
    # too, though restored files (b.txt) now match it with a new modification time.
    fake_llm.enqueue(Reply.text("ok"))
    assert _loom(repo, env, "run", "--continue", "thanks").returncode == 0
    assert _dot_git(repo) == git_before
