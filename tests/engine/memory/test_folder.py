"""The global scope's folder on disk: the cage, the caps, redaction, compare-and-set."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
from pathlib import Path

import pytest

from loom_engine.memory.entries import MemoryOperationError, StaleVersion
from loom_engine.memory.folder import MemoryFolder, MemoryLimits
from loom_engine.memory.project import project_key


@pytest.fixture
def folder(tmp_path: Path) -> MemoryFolder:
    return MemoryFolder(tmp_path / "mem")


def test_put_get_list_and_versions(folder: MemoryFolder) -> None:
    first = folder.put("MEMORY.md", "- uses uv\n", expected=None)
    assert folder.get("MEMORY.md") == first
    second = folder.put("MEMORY.md", "- uses uv\n- tests: pytest\n", expected=first.version)
    assert second.version != first.version
    folder.put("topics/build.md", "make all\n", expected=None)
    assert [e.path for e in folder.list()] == ["MEMORY.md", "topics/build.md"]
    assert [e.path for e in folder.list("topics")] == ["topics/build.md"]


def test_stale_write_refused_with_current_content(folder: MemoryFolder) -> None:
    first = folder.put("a.md", "one\n", expected=None)
    folder.put("a.md", "two\n", expected=first.version)
    with pytest.raises(StaleVersion) as raised:
        folder.put("a.md", "three\n", expected=first.version)
    assert raised.value.current is not None and raised.value.current.content == "two\n"
    with pytest.raises(StaleVersion):
        folder.put("a.md", "again\n", expected=None)  # "must not exist yet"


def test_delete_and_rename_check_the_version(folder: MemoryFolder) -> None:
    entry = folder.put("a.md", "x\n", expected=None)
    with pytest.raises(StaleVersion):
        folder.delete("a.md", expected="0" * 16)
    moved = folder.rename("a.md", "b/c.md", expected=entry.version)
    assert folder.get("a.md") is None and folder.get("b/c.md") == moved
    other = folder.put("d.md", "y\n", expected=None)
    with pytest.raises(MemoryOperationError, match="already exists"):
        folder.rename("d.md", "b/c.md", expected=other.version)
    folder.delete("b/c.md", expected=moved.version)
    assert not (folder.entries_dir / "b").exists()  # the emptied folder goes too


@pytest.mark.parametrize("path", ["../x.md", "a/../../x.md", "/etc/passwd", "a//b", "./a", "a\\b", "C:x"])
def test_escaping_paths_refused(folder: MemoryFolder, path: str) -> None:
    with pytest.raises(MemoryOperationError):
        folder.put(path, "x", expected=None)
    with pytest.raises(MemoryOperationError):
        folder.get(path)


def test_symlinks_refused(folder: MemoryFolder, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("keep out\n")
    folder.put("real.md", "x\n", expected=None)
    os.symlink(outside, folder.entries_dir / "linked")
    os.symlink(outside / "secret.md", folder.entries_dir / "file.md")
    for path in ("linked/secret.md", "file.md"):
        with pytest.raises(MemoryOperationError, match="symlink"):
            folder.get(path)
    with pytest.raises(MemoryOperationError, match="symlink"):
        folder.put("linked/new.md", "x", expected=None)
    with pytest.raises(MemoryOperationError, match="symlink"):
        folder.put("file.md", "x", expected=None)
    assert [e.path for e in folder.list()] == ["real.md"]  # links are not listed
    assert not (outside / "new.md").exists() and (outside / "secret.md").read_text() == "keep out\n"


def test_size_caps(tmp_path: Path) -> None:
    folder = MemoryFolder(tmp_path / "m", limits=MemoryLimits(entry_bytes=100, total_bytes=150, entries=2))
    with pytest.raises(MemoryOperationError, match="over the 100-byte limit of one memory file"):
        folder.put("a.md", "x" * 101, expected=None)
    folder.put("a.md", "x" * 100, expected=None)
    with pytest.raises(MemoryOperationError, match="over its 150-byte limit"):
        folder.put("b.md", "y" * 60, expected=None)
    folder.put("b.md", "y" * 10, expected=None)
    with pytest.raises(MemoryOperationError, match="already holds 2 files"):
        folder.put("c.md", "z", expected=None)


def test_secrets_redacted_before_storing(folder: MemoryFolder) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6" * 6
    entry = folder.put("keys.md", f"the key is {key}\npassword = 'hunter2hunter2'\n", expected=None)
    on_disk = (folder.entries_dir / "keys.md").read_text()
    assert key not in on_disk and "hunter2hunter2" not in on_disk and "[REDACTED" in on_disk
    assert entry.content == on_disk


def _writer(root: str, number: int, count: int) -> None:
    folder = MemoryFolder(Path(root))
    for item in range(count):
        while True:
            current = folder.get("log.md")
            text = (current.content if current else "") + f"{number}-{item}\n"
            try:
                folder.put("log.md", text, expected=current.version if current else None)
                break
            except StaleVersion:
                continue


def test_two_processes_lose_no_write(tmp_path: Path) -> None:
    root = str(tmp_path / "m")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(root, number, 25)) for number in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    lines = (Path(root) / "memories" / "log.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"{n}-{i}" for n in range(2) for i in range(25))


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_worktrees_share_a_key_other_projects_do_not(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    _git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x", cwd=repo)
    _git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo)
    (repo / "sub").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    assert project_key(repo).key == project_key(tmp_path / "wt").key == project_key(repo / "sub").key
    assert project_key(other).key != project_key(repo).key


def test_a_forged_git_file_cannot_borrow_another_projects_memory(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    _git("init", "-q", cwd=victim)
    _git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x", cwd=victim)
    _git("worktree", "add", "-q", str(tmp_path / "victim-wt"), cwd=victim)
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    # names the victim's worktree git dir, whose back-link points at the victim's worktree
    (hostile / ".git").write_text(f"gitdir: {victim / '.git' / 'worktrees' / 'victim-wt'}\n")
    assert project_key(hostile).key != project_key(victim).key
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(victim / ".git", linked / ".git")
    assert project_key(linked).key != project_key(victim).key
