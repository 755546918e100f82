"""What the model is told of a file a PostToolUse hook rewrote, and the read record."""

from __future__ import annotations

from pathlib import Path

from loom_engine.tools.base import ToolSessionState
from loom_engine.tools.hook_rewrites import MAX_DIFF_CHARS, WrittenFiles, written_by_call


def _written(tmp_path: Path, name: str, text: str) -> tuple[Path, ToolSessionState]:
    path = tmp_path / name
    path.write_text(text)
    state = ToolSessionState()
    state.record_read(path)
    return path, state


def test_the_files_a_call_wrote_are_those_whose_record_it_set_anew(tmp_path: Path) -> None:
    kept, state = _written(tmp_path, "kept.py", "a\n")
    before = dict(state.read_files)
    written = tmp_path / "new.py"
    written.write_text("b\n")
    state.record_read(written)
    assert written_by_call(before, state) == (written,)
    assert kept.exists()


def test_an_untouched_file_says_nothing(tmp_path: Path) -> None:
    path, state = _written(tmp_path, "a.py", "x = 1\n")
    assert WrittenFiles.capture([path]).rewritten(state, tmp_path) == ""


def test_a_large_rewritten_file_is_shown_as_a_capped_diff_and_its_record_refreshed(tmp_path: Path) -> None:
    original = "".join(f"value_{n}=1\n" for n in range(3000))
    path, state = _written(tmp_path, "big.py", original)
    files = WrittenFiles.capture([path])
    path.write_text(original.replace("0=", "0 = "))  # every tenth line
    assert state.changed_since_read(path)
    note = files.rewritten(state, tmp_path)
    assert not state.changed_since_read(path)
    assert note.startswith("[A PostToolUse hook changed big.py after this call wrote it (edit against the new text):")
    assert "--- big.py (as written)" in note and "+value_0 = 1" in note and "-value_0=1" in note
    assert "+value_2990 = 1" not in note  # past the cap
    assert note.endswith("\n[... diff cut at 8,000 characters; read_file shows the file]\n]")
    assert len(note) < MAX_DIFF_CHARS + 200


def test_a_file_the_hook_deleted_is_left_to_the_next_call(tmp_path: Path) -> None:
    path, state = _written(tmp_path, "gone.py", "x\n")
    files = WrittenFiles.capture([path])
    path.unlink()
    assert files.rewritten(state, tmp_path) == ""
    assert state.changed_since_read(path)
