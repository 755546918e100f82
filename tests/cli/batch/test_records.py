"""A task's worktree uses what the user decided for its repository: trust is by content, so
the worktree's settings are trusted only where they are what the user trusted there."""

from __future__ import annotations

from pathlib import Path

from loom_cli.workspace_records import WorkspaceRecords


def test_a_worktree_reads_its_repository_s_records_and_only_those(tmp_path: Path) -> None:
    repo, worktree, other = tmp_path / "repo", tmp_path / "loom-batch-t1", tmp_path / "other"
    for folder in (repo, worktree, other):
        folder.mkdir()
    WorkspaceRecords(tmp_path).trust(repo, "hash-of-the-trusted-settings")
    WorkspaceRecords(tmp_path).save_rules(repo, ("bash(pytest:*)",))
    seen = WorkspaceRecords(tmp_path, same_as=(worktree, repo))
    assert seen.trusted_hash(worktree) == "hash-of-the-trusted-settings"
    assert seen.saved_rules(worktree) == ("bash(pytest:*)",)
    assert seen.trusted_hash(other) is None
    assert WorkspaceRecords(tmp_path).trusted_hash(worktree) is None  # without the link, nothing
