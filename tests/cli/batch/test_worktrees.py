"""A task's worktree: detached at its base, away from the user's checkout (which stays byte
for byte as it was), its diff with new files, gone afterwards; clone URLs cloned once."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from loom_cli.batch.worktrees import (
    WorktreeError,
    add_worktree,
    changes,
    keep_worktree,
    remove_abandoned_worktrees,
    remove_worktree,
)
from tests.doubles.batch_tasks import abandoned_worktree, checkout_state, git, user_repository


@pytest.fixture(autouse=True)
def data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Loom's data folder (clones, locks, leases) is the test's own, never the user's."""
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_the_diff_holds_edits_deletions_and_new_files_and_the_checkout_is_untouched(tmp_path: Path) -> None:
    repo = user_repository(tmp_path / "repo")
    before = checkout_state(repo)
    first = git(repo, "rev-parse", "HEAD~1").strip()
    tree = add_worktree(str(repo), "HEAD~1", "t1")
    assert tree.base == first and tree.cwd == tree.path and not tree.path.is_relative_to(repo)
    assert (tree.path / "app.py").read_text() == "print('hello')\n"  # the base, not the user's edits
    (tree.path / "app.py").write_text("print('changed')\n")
    (tree.path / "notes.md").unlink()
    (tree.path / "new").mkdir()
    (tree.path / "new" / "file.txt").write_text("new\n")
    found = changes(tree)
    assert found.files == ("app.py", "new/file.txt", "notes.md")
    assert git(tree.path, "status", "--porcelain") == " M app.py\n D notes.md\n?? new/\n"  # its index untouched
    remove_worktree(tree)
    assert not tree.path.exists() and git(repo, "worktree", "list").count("\n") == 1
    assert checkout_state(repo) == before
    clean = add_worktree(str(repo), first, "check")
    patch = tmp_path / "patch.diff"
    patch.write_text(found.diff)
    git(clean.path, "apply", str(patch))
    assert (clean.path / "new" / "file.txt").read_text() == "new\n" and not (clean.path / "notes.md").exists()
    remove_worktree(clean)


def test_a_task_named_by_a_subfolder_runs_in_the_same_subfolder(tmp_path: Path) -> None:
    repo = user_repository(tmp_path / "repo")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "m.py").write_text("x = 1\n")
    git(repo, "add", "pkg")
    git(repo, "commit", "-qm", "pkg")
    tree = add_worktree(str(repo / "pkg"), None, "sub")
    try:
        assert tree.cwd == tree.path / "pkg" and (tree.cwd / "m.py").is_file()
    finally:
        remove_worktree(tree)


def test_a_clone_url_is_cloned_once_into_loom_s_data_folder(tmp_path: Path) -> None:
    origin = user_repository(tmp_path / "origin")
    url = f"file://{origin}"
    first = add_worktree(url, None, "a")
    clones = list((tmp_path / "data" / "batch" / "clones").iterdir())
    cloned = next(path for path in clones if path.is_dir())
    stamp = os.stat(cloned / "HEAD").st_mtime_ns
    second = add_worktree(url, None, "b")
    assert second.repo == first.repo == cloned and os.stat(cloned / "HEAD").st_mtime_ns == stamp
    assert (second.path / "app.py").read_text() == "print('hello, world')\n"
    for tree in (first, second):
        remove_worktree(tree)
    with pytest.raises(WorktreeError, match="base 'nope': not found"):
        add_worktree(url, "nope", "c")


def test_a_missing_base_or_folder_is_one_line(tmp_path: Path) -> None:
    repo = user_repository(tmp_path / "repo")
    with pytest.raises(WorktreeError, match=r"base 'v9': no such commit in .*repo"):
        add_worktree(str(repo), "v9", "t")
    with pytest.raises(WorktreeError, match="no such folder"):
        add_worktree(str(tmp_path / "gone"), None, "t")


def test_a_clone_that_fails_says_git_s_reason(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError) as raised:
        add_worktree(f"file://{tmp_path}/missing.git", None, "t")
    assert str(raised.value) == f"git clone: fatal: '{tmp_path}/missing.git' does not appear to be a git repository"
    assert [path.suffix for path in (tmp_path / "data" / "batch" / "clones").iterdir()] == [".lock"]  # no half clone


def test_workers_adding_and_removing_worktrees_at_once_do_not_trip_on_each_other(tmp_path: Path) -> None:
    repo = user_repository(tmp_path / "repo")

    def worker(index: int) -> list[str]:
        failures = []
        for turn in range(8):  # git drops .git/worktrees with its last entry, under another's add
            try:
                remove_worktree(add_worktree(str(repo), None, f"w{index}-{turn}"))
            except WorktreeError as error:
                failures.append(str(error))
        return failures

    with ThreadPoolExecutor(4) as pool:
        assert [failure for failures in pool.map(worker, range(4)) for failure in failures] == []
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_dead_worker_s_worktree_is_removed_by_the_next_batch_and_no_other(tmp_path: Path,
                                                                            data_folder: Path) -> None:
    """A worker killed with its task's worktree (a second Ctrl+C, a killed driver): the next
    batch removes it. A live worker's worktree, and one kept with --keep-worktrees, stay."""
    repo = user_repository(tmp_path / "repo")
    before = checkout_state(repo)
    left = abandoned_worktree(repo, data_folder)
    live, kept = add_worktree(str(repo), None, "live"), add_worktree(str(repo), None, "kept")
    keep_worktree(kept)
    assert left.is_dir() and git(repo, "worktree", "list").count("\n") == 4

    assert remove_abandoned_worktrees() == 1
    assert not left.exists() and str(left) not in git(repo, "worktree", "list")
    assert live.path.is_dir() and kept.path.is_dir() and git(repo, "worktree", "list").count("\n") == 3
    assert remove_abandoned_worktrees() == 0  # nothing twice
    remove_worktree(live)
    remove_worktree(kept)
    assert remove_abandoned_worktrees() == 0 and list((data_folder / "batch" / "worktrees").iterdir()) == []
    assert checkout_state(repo) == before


def test_a_dead_worker_s_worktree_whose_folder_is_gone_leaves_no_entry_in_the_repository(
        tmp_path: Path, data_folder: Path) -> None:
    """The folder of an abandoned worktree removed by someone else (a cleaned /tmp): the
    next batch drops the repository's entry for it and its lease."""
    repo = user_repository(tmp_path / "repo")
    left = abandoned_worktree(repo, data_folder)
    shutil.rmtree(left)
    assert str(left) in git(repo, "worktree", "list")

    assert remove_abandoned_worktrees() == 0  # nothing on disk to remove
    assert str(left) not in git(repo, "worktree", "list")
    assert list((data_folder / "batch" / "worktrees").iterdir()) == []
