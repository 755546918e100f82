"""The shared text-file layer: encodings, line endings, binary detection, atomic saves, diffs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from builtin_tools._files.diff import changed_regions, unified_diff
from builtin_tools._files.near_match import find_near_match
from builtin_tools._files.text import (
    UTF8,
    BinaryFileError,
    TextEncoding,
    TextFileError,
    atomic_write,
    binary_kind,
    count_lines,
    detect_encoding,
    detect_newline,
    for_display,
    load_text,
    split_lines,
)


@pytest.mark.parametrize("data, codec, bom", [
    (b"plain ascii\n", "utf-8", b""),
    ("naïve café ✅\n".encode(), "utf-8", b""),
    (b"\xef\xbb\xbf" + "bom ✅\n".encode(), "utf-8", b"\xef\xbb\xbf"),
    (b"\xff\xfe" + "utf16 ✅\r\n".encode("utf-16-le"), "utf-16-le", b"\xff\xfe"),
    (b"\xfe\xff" + "utf16 be\n".encode("utf-16-be"), "utf-16-be", b"\xfe\xff"),
    (b"\xff\xfe\x00\x00" + "utf32\n".encode("utf-32-le"), "utf-32-le", b"\xff\xfe\x00\x00"),
    ("café “quoted”\n".encode("cp1252"), "cp1252", b""),
    (b"undefined in cp1252: \x81\x8d\xe9\n", "latin-1", b""),
])
def test_detected_encoding_round_trips_byte_for_byte(data: bytes, codec: str, bom: bytes) -> None:
    encoding = detect_encoding(data)
    assert (encoding.codec, encoding.bom) == (codec, bom)
    assert encoding.encode(encoding.decode(data)) == data


def test_utf8_with_a_stray_byte_keeps_the_byte_and_shows_a_replacement_char() -> None:
    data = "ünïcödé everywhere ".encode() + b"\xff" + b" end\n"
    encoding = detect_encoding(data)
    assert encoding == TextEncoding("utf-8", errors="surrogateescape")
    text = encoding.decode(data)
    assert encoding.encode(text) == data
    assert for_display(text) == "ünïcödé everywhere \ufffd end\n"


def test_unencodable_character_is_a_clear_error() -> None:
    with pytest.raises(TextFileError, match=r"Latin-1.*'✅'.*line 2"):
        TextEncoding("latin-1").encode("ok\nnot ok ✅\n")


@pytest.mark.parametrize("data, kind", [
    (b"abc\x00def", "binary file"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "PNG image"),
    (b"%PDF-1.7\n", "PDF document"),
    (bytes(range(1, 9)) * 50, "binary file"),
])
def test_binary_kinds(data: bytes, kind: str) -> None:
    assert binary_kind(data) == kind


@pytest.mark.parametrize("data", [b"", b"hello\tworld\r\n", b"\x1b[31mred\x1b[0m\n",
                                  b"\xff\xfe" + "utf-16 has NULs\n".encode("utf-16-le")])
def test_text_is_not_binary(data: bytes) -> None:
    assert binary_kind(data) is None


def test_newline_style_and_line_splitting() -> None:
    assert detect_newline("a\r\nb\nc") == "\r\n"
    assert detect_newline("a\nb\r\n") == "\n"
    assert detect_newline("no break") == "\n"
    assert split_lines("a\r\nb\rc\nd") == ["a\r\n", "b\r", "c\n", "d"]
    # Form feeds and unicode separators are not line breaks here (str.splitlines thinks so).
    assert split_lines("a\fb\u2028c\nd\n") == ["a\fb\u2028c\n", "d\n"]
    assert count_lines("") == 0
    assert count_lines("one") == 1
    assert count_lines("one\r\ntwo\r\n") == 2
    assert count_lines("a\rb") == 2


def test_load_text_keeps_encoding_newline_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo")
    path.chmod(0o640)
    loaded = load_text(path, "f.txt")
    assert loaded.text == "one\r\ntwo"
    assert loaded.encoding.bom == b"\xef\xbb\xbf"
    assert loaded.newline == "\r\n"
    assert loaded.mode == 0o640
    assert not loaded.ends_with_newline


def test_load_text_refuses_binary_and_directories(tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(b"\x00\x01\x02")
    with pytest.raises(BinaryFileError, match="blob is a binary file"):
        load_text(tmp_path / "blob", "blob")
    with pytest.raises(TextFileError, match=r"is a directory.*ls"):
        load_text(tmp_path, "here")


def test_atomic_write_keeps_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "script.sh"
    path.write_text("old")
    path.chmod(0o755)
    atomic_write(path, b"new", mode=0o755)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.sh"]


def test_atomic_write_new_file_gets_umask_mode_and_parents(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    reference.write_text("x")  # created the ordinary way: 0666 minus umask
    target = tmp_path / "a" / "b" / "new.txt"
    atomic_write(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(reference.stat().st_mode)


def test_atomic_write_failure_removes_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_rename(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError):
        atomic_write(tmp_path / "f", b"data")
    assert list(tmp_path.iterdir()) == []


def test_unified_diff_format() -> None:
    old = "a\nb\nc\nd\ne\nf\ng\nh\n"
    new = "a\nb\nc\nD\ne\nf\ng\nh\n"
    assert unified_diff(old, new, "a/x", "b/x") == (
        "--- a/x\n+++ b/x\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n")
    assert unified_diff(old, old, "a/x", "b/x") == ""


def test_unified_diff_marks_missing_final_newline_and_new_files() -> None:
    assert unified_diff("x", "y", "a/f", "b/f") == (
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n")
    assert unified_diff("", "one\ntwo\n", "/dev/null", "b/f") == "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+one\n+two\n"


def test_unified_diff_of_a_big_file_has_the_right_line_numbers() -> None:
    lines = [f"line {i}\n" for i in range(1, 200_001)]
    old = "".join(lines)
    lines[149_999] = "changed\n"
    diff = unified_diff(old, "".join(lines), "a/big", "b/big")
    assert "@@ -149997,7 +149997,7 @@\n" in diff
    assert "-line 150000\n+changed\n" in diff


def test_changed_regions() -> None:
    assert changed_regions("a\nb\nc\n", "a\nB\nc\n") == [(1, 2)]
    assert changed_regions("a\nb\nc\n", "a\nc\n") == [(1, 1)]


def test_near_match_whitespace_only() -> None:
    text = "def f():\n    if x:\n        return 1\n"
    near = find_near_match(text, "if x:\n    return 1")
    assert near is not None and near.whitespace_only and near.line == 2


def test_near_match_similar_text() -> None:
    text = "".join(f"value_{i} = compute({i})\n" for i in range(50)) + "result = compute_total(items, tax=0.2)\n"
    near = find_near_match(text, "result = compute_totals(items, tax=0.25)")
    assert near is not None and not near.whitespace_only and near.line == 51


def test_near_match_none_when_nothing_is_alike() -> None:
    assert find_near_match("alpha\nbeta\n", "zzzzzzzzzzzz qqqqqqqq") is None


def test_utf8_constant() -> None:
    assert UTF8.label == "UTF-8"
