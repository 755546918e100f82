"""Restore: who changed what (conflicts, what may be deleted), links, modes, a stale
preview, and the undo snapshot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loom_engine.messages import Message
from loom_engine.snapshots.model import StalePlan
from loom_engine.snapshots.restore import apply_restore, last_undo, plan_restore, restore_points


def test_a_change_made_outside_loom_between_runs_is_a_conflict(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "a.txt").write_text("assistant\n")
    checkpointer.snapshot("run_end")
    (repo / "a.txt").write_text("assistant\nthen the user\n")  # in an editor, between two prompts
    checkpointer.snapshot("prompt", prompt_id="p2")
    (repo / "b.txt").write_text("assistant again\n")
    checkpointer.snapshot("run_end")
    plan = plan_restore(checkpointer, first)
    by_path = {c.path: c for c in plan.changes}
    assert by_path["a.txt"].conflict and not by_path["b.txt"].conflict
    result = apply_restore(checkpointer, plan)
    assert (repo / "a.txt").read_text() == "assistant\nthen the user\n"
    assert (repo / "b.txt").read_text() == "beta\n"
    assert [c.path for c in result.skipped] == ["a.txt"]
    apply_restore(checkpointer, plan_restore(checkpointer, first), include_conflicts=True)
    assert (repo / "a.txt").read_text() == "alpha\n"


def test_a_change_after_loom_last_looked_is_a_conflict(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "a.txt").write_text("assistant\n")
    checkpointer.snapshot("run_end")
    (repo / "a.txt").write_text("assistant\nuser\n")
    assert [c.path for c in plan_restore(checkpointer, first).conflicts] == ["a.txt"]


def test_only_files_the_assistant_created_are_deleted(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "made").mkdir()
    (repo / "made" / "by_assistant.txt").write_text("x\n")
    checkpointer.snapshot("tool")
    (repo / "by_user.txt").write_text("mine\n")
    checkpointer.snapshot("prompt", prompt_id="p2")
    (repo / "later_by_user.txt").write_text("mine too\n")
    plan = plan_restore(checkpointer, first)
    by_path = {c.path: c for c in plan.changes}
    assert by_path["made/by_assistant.txt"].action == "delete" and by_path["made/by_assistant.txt"].blocked is None
    assert by_path["by_user.txt"].blocked == "the assistant did not create it"
    assert by_path["later_by_user.txt"].blocked == "the assistant did not create it"
    apply_restore(checkpointer, plan, include_conflicts=True)  # even so: never deleted
    assert not (repo / "made" / "by_assistant.txt").exists()
    assert (repo / "by_user.txt").exists() and (repo / "later_by_user.txt").exists()


def test_deleted_files_come_back_with_their_mode_and_links_too(repo: Path, make_checkpointer) -> None:
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    os.symlink("a.txt", repo / "link")
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "run.sh").unlink()
    (repo / "link").unlink()
    os.symlink("b.txt", repo / "link")
    (repo / "a.txt").chmod(0o755)
    checkpointer.snapshot("tool")
    plan = plan_restore(checkpointer, first)
    assert {c.path: c.action for c in plan.changes} == {"run.sh": "recreate", "link": "modify", "a.txt": "modify"}
    apply_restore(checkpointer, plan)
    assert os.access(repo / "run.sh", os.X_OK) and (repo / "run.sh").read_text().endswith("echo hi\n")
    assert os.readlink(repo / "link") == "a.txt"
    assert not os.access(repo / "a.txt", os.X_OK)


def test_a_folder_turned_into_a_link_out_of_the_workspace_is_not_written_through(
        repo: Path, tmp_path: Path, make_checkpointer) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "x.txt").write_text("x\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "src" / "x.txt").unlink()
    (repo / "src").rmdir()
    os.symlink(outside, repo / "src")
    checkpointer.snapshot("tool")
    apply_restore(checkpointer, plan_restore(checkpointer, first))
    assert list(outside.iterdir()) == []
    assert (repo / "src" / "x.txt").read_text() == "x\n" and not (repo / "src").is_symlink()


def test_a_preview_made_stale_by_an_edit_is_refused(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "a.txt").write_text("assistant\n")
    checkpointer.snapshot("run_end")
    plan = plan_restore(checkpointer, first)
    (repo / "b.txt").write_text("edited while the preview was open\n")
    with pytest.raises(StalePlan):
        apply_restore(checkpointer, plan)
    assert (repo / "a.txt").read_text() == "assistant\n"


def test_a_restore_can_be_undone(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "a.txt").write_text("assistant\n")
    (repo / "b.txt").unlink()
    (repo / "c.txt").write_text("new\n")
    checkpointer.snapshot("run_end")
    result = apply_restore(checkpointer, plan_restore(checkpointer, first))
    assert sorted(os.listdir(repo)) == [".git", "a.txt", "b.txt"]
    assert last_undo(checkpointer) == result.undo
    undo = plan_restore(checkpointer, result.undo)
    assert not undo.conflicts and not undo.blocked
    apply_restore(checkpointer, undo)
    assert (repo / "a.txt").read_text() == "assistant\n" and not (repo / "b.txt").exists()
    assert (repo / "c.txt").read_text() == "new\n"


def test_restore_points_name_the_files_each_prompt_changed(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first, second = Message.user("change a"), Message.user("change b", prompt="change b @x")
    checkpointer.snapshot("prompt", prompt_id=first.id)
    (repo / "a.txt").write_text("1\n")
    checkpointer.snapshot("run_end")
    checkpointer.snapshot("prompt", prompt_id=second.id)
    (repo / "b.txt").write_text("2\n")
    checkpointer.snapshot("tool")
    reminder = Message.user("[a reminder]", reminder=True)
    points = restore_points(checkpointer, [first, reminder, second])
    assert [(p.index, p.text, p.files_changed) for p in points] == [(1, "change a", ("a.txt",)),
                                                                    (2, "change b @x", ("b.txt",))]
    assert all(p.can_restore_code and p.time for p in points)
    assert restore_points(None, [first])[0].snapshot is None
