"""The shadow repository: never the user's .git, nothing of a hostile workspace runs,
ignored and over-cap files are left out, an unchanged workspace costs no new object."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loom_engine.snapshots.model import SnapshotCaps
from loom_engine.snapshots.restore import apply_restore, plan_restore
from tests.engine.snapshots.conftest import git, tree_hashes


def test_a_hostile_repository_runs_nothing_and_its_bytes_stay_raw(
        repo: Path, tmp_path: Path, make_checkpointer, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "PWNED"
    touch = f"sh -c 'touch {marker}; cat'"
    # Filters, diff drivers, ident and line-ending conversion asked for by the repository...
    (repo / ".gitattributes").write_text("* filter=evil diff=evil ident\n*.txt text eol=crlf\n")
    # ...and defined in the user's repository config and global config (as git-lfs would be).
    git(repo, "config", "filter.evil.clean", touch)
    git(repo, "config", "filter.evil.smudge", touch)
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "diff.evil.textconv", touch)
    git(repo, "config", "core.fsmonitor", f"touch {marker}")
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / name).chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[filter \"evil\"]\n\tclean = {touch}\n\tsmudge = {touch}\n"
                                     f"[core]\n\thooksPath = {hooks}\n")
    monkeypatch.setenv("HOME", str(home))
    # A GIT_DIR inherited from the environment must not lead the shadow repo to the user's.
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    dot_git = tree_hashes(repo / ".git")
    raw = b"line one\r\nline two $Id: keep me $\r\nlast\n"  # mixed endings, an ident
    (repo / "a.txt").write_bytes(raw)
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "a.txt").write_text("changed by the assistant\n")
    checkpointer.snapshot("run_end")
    plan = plan_restore(checkpointer, first)
    result = apply_restore(checkpointer, plan)
    assert [c.path for c in result.restored] == ["a.txt"]
    assert (repo / "a.txt").read_bytes() == raw  # no line-ending conversion, no ident
    assert "line two $Id: keep me $" in plan.changes[0].diff
    assert not marker.exists()
    assert tree_hashes(repo / ".git") == dot_git
    assert not str(checkpointer.git_dir).startswith(str(repo))


def test_ignored_files_are_never_snapshotted_nor_touched(repo: Path, make_checkpointer) -> None:
    (repo / ".gitignore").write_text("build/\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret.env\n")
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("object")
    (repo / "secret.env").write_text("KEY=1")
    (repo / "new.txt").write_text("made by the assistant")
    checkpointer.snapshot("run_end")
    tree = checkpointer.repo.tree_entries(checkpointer.latest().tree)  # type: ignore[union-attr]
    assert "build/out.o" not in tree and "secret.env" not in tree and "new.txt" in tree
    apply_restore(checkpointer, plan_restore(checkpointer, first))
    assert not (repo / "new.txt").exists()
    assert (repo / "build" / "out.o").exists() and (repo / "secret.env").exists()


def test_a_workspace_that_is_not_a_repository_is_snapshotted_too(tmp_path: Path, make_checkpointer) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\n")
    checkpointer = make_checkpointer(folder)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (folder / "notes.txt").write_text("two\n")
    checkpointer.snapshot("run_end")
    apply_restore(checkpointer, plan_restore(checkpointer, first))
    assert (folder / "notes.txt").read_text() == "one\n"
    assert not (folder / ".git").exists()


def test_a_nested_repository_is_left_out(repo: Path, make_checkpointer) -> None:
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x.c").write_text("int x;\n")
    checkpointer = make_checkpointer(repo)
    snap = checkpointer.snapshot("prompt", prompt_id="p1")
    assert not any(p.startswith("vendor") for p in checkpointer.repo.tree_entries(snap.tree))


def test_big_files_are_left_out_listed_and_never_touched(repo: Path, make_checkpointer) -> None:
    caps = SnapshotCaps(max_file_bytes=1000, max_total_bytes=10_000)
    with open(repo / "huge.bin", "wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: quick to make, never read
    (repo / "medium.txt").write_text("m" * 900)
    checkpointer = make_checkpointer(repo, caps)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    assert [(item.path, item.reason) for item in first.left_out] == [("huge.bin", "too_big")]
    # The assistant grows a kept file past the cap, and makes files past the total.
    (repo / "medium.txt").write_text("m" * 2000)
    for number in range(12):
        (repo / f"gen{number:02d}.txt").write_text("g" * 990)
    second = checkpointer.snapshot("run_end")
    reasons = {item.path: item.reason for item in second.left_out}
    assert reasons["huge.bin"] == "too_big" and reasons["medium.txt"] == "too_big"
    assert "over_total" in reasons.values() and second.total_bytes <= caps.max_total_bytes
    plan = plan_restore(checkpointer, first)
    by_path = {c.path: c for c in plan.changes}
    assert by_path["medium.txt"].blocked == "it is too big to keep a copy of the current version"
    assert "huge.bin" not in by_path
    apply_restore(checkpointer, plan, include_conflicts=True)
    assert (repo / "medium.txt").read_text() == "m" * 2000
    assert os.path.getsize(repo / "huge.bin") == 100 * 1024 * 1024
    kept_gen = [p for p in reasons if p.startswith("gen") and reasons[p] == "over_total"]
    assert all((repo / p).exists() for p in kept_gen)  # never in a snapshot: never deleted


def test_an_unchanged_workspace_writes_no_object(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    objects = tree_hashes(checkpointer.git_dir / "objects")
    again = checkpointer.snapshot("tool")
    assert again.tree == first.tree and again.id == first.id + 1
    assert tree_hashes(checkpointer.git_dir / "objects") == objects


def test_old_prompts_are_pruned(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo, SnapshotCaps(keep_prompts=3))
    for number in range(6):
        (repo / "a.txt").write_text(f"version {number}\n")
        checkpointer.snapshot("prompt", prompt_id=f"p{number}")
        checkpointer.snapshot("run_end")
    kept = checkpointer.snapshots()
    assert [s.prompt_id for s in kept if s.kind == "prompt"] == ["p3", "p4", "p5"]
    refs = git(checkpointer.git_dir, "--git-dir", str(checkpointer.git_dir), "for-each-ref", "--format=%(refname)")
    assert len(refs.split()) == len({s.tree for s in kept})


def test_many_diffs_in_one_call_match_one_by_one(repo: Path, make_checkpointer) -> None:
    checkpointer = make_checkpointer(repo)
    trees = [checkpointer.snapshot("prompt", prompt_id="p0").tree]
    odd_names = ["with space.txt", "new\nline.txt", "0123456789abcdef0123456789abcdef01234567 x", ":colon"]
    for number, name in enumerate(odd_names):
        (repo / name).write_text(f"{number}\n")
        (repo / "a.txt").write_text(f"a {number}\n")
        trees.append(checkpointer.snapshot("tool").tree)
    pairs = [(a, b) for a in trees for b in trees]
    many = checkpointer.repo.diff_many(pairs)
    for a, b in pairs:
        assert many.get((a, b), []) == checkpointer.repo.diff(a, b)


def test_loom_folders_inside_the_workspace_are_never_snapshotted(repo: Path) -> None:
    from loom_engine.snapshots.checkpoints import Checkpointer

    data = repo / ".loom data [x]"
    (data / "sessions").mkdir(parents=True)
    (data / "sessions" / "s.jsonl").write_text("{}\n")
    checkpointer = Checkpointer(repo, data / "snapshots", exclude=(data,))
    first = checkpointer.snapshot("prompt", prompt_id="p1")
    (data / "sessions" / "s.jsonl").write_text("{}\n{}\n")
    checkpointer.snapshot("tool")
    assert all(not p.startswith(".loom data") for p in checkpointer.repo.tree_entries(first.tree))
    assert plan_restore(checkpointer, first).empty


_CTRL_C_STORM = """
import os, signal, sys, threading
from pathlib import Path
from loom_engine.snapshots.shadow import ShadowRepo

signal.signal(signal.SIGINT, lambda *_: None)  # Loom takes Ctrl-C as "stop the model"
repo = ShadowRepo(Path(sys.argv[1]), Path(sys.argv[2]))
repo.ensure()
done = threading.Event()

def storm() -> None:
    while not done.is_set():
        os.killpg(0, signal.SIGINT)

threading.Thread(target=storm, daemon=True).start()
try:
    for _ in range(150):
        repo.candidates()
finally:
    done.set()
print("all ran")
"""


def test_ctrl_c_at_the_terminal_never_kills_a_snapshot_being_taken(repo: Path, tmp_path: Path) -> None:
    # Ctrl-C reaches the whole foreground group; git runs in a group of its own, but a
    # signal landing between fork and its setpgid used to kill it ("ls-files failed: -2").
    # Without the fix about one spawn in five died under this storm.
    run = subprocess.run([sys.executable, "-c", _CTRL_C_STORM, str(repo), str(tmp_path / "shadow")],
                         capture_output=True, text=True,
                         start_new_session=True)  # a group of its own, as a terminal's foreground job
    assert (run.returncode, run.stdout.strip()) == (0, "all ran"), run.stderr[-2000:]
