"""edit_file on real files in a temp workspace: every refusal, and bytes kept outside the edit."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builtin_tools.edit_file import EditFileInput, EditFileTool
from builtin_tools.read_file import ReadFileTool
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import ToolContext, ToolOutput

from .conftest import CallTool, MakeCtx

TOOL = EditFileTool()
READ = ReadFileTool()

SOURCE = """import os


def greet(name):
    message = "hello " + name
    return message


def leave(name):
    message = "bye " + name
    return message
"""


@pytest.fixture
def source(ctx: ToolContext, tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(SOURCE)
    return path


async def read(ctx: ToolContext, call_tool: CallTool, path: str) -> None:
    assert not (await call_tool(READ, ctx, path=path)).is_error


async def edit(ctx: ToolContext, call_tool: CallTool, path: str, old: str, new: str,
               replace_all: bool = False) -> ToolOutput:
    return await call_tool(TOOL, ctx, path=path, old_string=old, new_string=new, replace_all=replace_all)


async def test_edit_shows_the_region_and_a_diff(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", '"hello " + name', 'f"hello {name}!"')
    assert not out.is_error
    assert source.read_text() == SOURCE.replace('"hello " + name', 'f"hello {name}!"')
    assert out.content == (
        "Edited app.py (1 replacement). The changed region now reads:\n"
        "     2\t\n     3\t\n     4\tdef greet(name):\n"
        '     5\t    message = f"hello {name}!"\n'
        "     6\t    return message\n     7\t\n     8\t")
    assert out.display is not None and out.display["kind"] == "diff" and out.display["path"] == "app.py"
    assert '-    message = "hello " + name\n+    message = f"hello {name}!"\n' in out.display["diff"]
    assert out.display["diff"].startswith("--- a/app.py\n+++ b/app.py\n@@ -2,7 +2,7 @@\n")


async def test_not_read_first_is_refused(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    out = await edit(ctx, call_tool, "app.py", "import os", "import sys")
    assert out.is_error and "has not been read" in out.content and "read_file" in out.content
    assert source.read_text() == SOURCE


async def test_changed_on_disk_since_read_is_refused(ctx: ToolContext, call_tool: CallTool,
                                                    source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    source.write_text(SOURCE + "# user added this\n")
    out = await edit(ctx, call_tool, "app.py", "import os", "import sys")
    assert out.is_error and "changed on disk" in out.content and "read_file again" in out.content
    assert source.read_text().startswith("import os")


async def test_not_found_shows_a_whitespace_near_match(ctx: ToolContext, call_tool: CallTool,
                                                       source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", 'def leave(name):\n  message = "bye " + name', "x")
    assert out.is_error
    assert out.content.startswith("old_string was not found in app.py.")
    assert "differs only in whitespace" in out.content and "line 9" in out.content
    assert '     9\tdef leave(name):\n    10\t    message = "bye " + name' in out.content


async def test_not_found_shows_the_most_similar_text(ctx: ToolContext, call_tool: CallTool,
                                                     source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", 'def leave(person):\n    message = "bye " + person', "x")
    assert out.is_error and "most similar text starts at line 9" in out.content
    assert "    10\t    message = \"bye \" + name" in out.content


async def test_not_found_without_any_near_match(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", "class Zebra(Quux): pass  # zzz", "x")
    assert out.is_error and "Nothing similar was found" in out.content and "read_file" in out.content


async def test_line_number_prefixes_are_pointed_out(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", "     4\tdef greet(name):", "def greet(who):")
    assert out.is_error and "line-number prefixes" in out.content


async def test_several_matches_need_replace_all(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", "return message", "return message.upper()")
    assert out.is_error
    assert "occurs 2 times" in out.content and "lines 6, 11" in out.content and "replace_all" in out.content
    assert source.read_text() == SOURCE
    out = await edit(ctx, call_tool, "app.py", "return message", "return message.upper()", replace_all=True)
    assert out.content.startswith("Edited app.py (2 replacements).")
    assert source.read_text().count("return message.upper()") == 2


async def test_identical_strings_are_refused(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    out = await edit(ctx, call_tool, "app.py", "import os", "import os")
    assert out.is_error and "identical" in out.content


async def test_consecutive_edits_need_no_re_read(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    assert not (await edit(ctx, call_tool, "app.py", "import os", "import sys")).is_error
    assert not (await edit(ctx, call_tool, "app.py", "import sys", "import re")).is_error
    assert source.read_text().startswith("import re\n")


async def test_crlf_file_matched_with_lf_strings_stays_crlf(ctx: ToolContext, call_tool: CallTool,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "win.py"
    path.write_bytes(b"def f():\r\n    a = 1\r\n    b = 2\r\n    return a\r\n")
    await read(ctx, call_tool, "win.py")
    out = await edit(ctx, call_tool, "win.py", "    a = 1\n    b = 2\n", "    a = 10\n    b = 20\n    c = 30\n")
    assert not out.is_error
    assert path.read_bytes() == b"def f():\r\n    a = 10\r\n    b = 20\r\n    c = 30\r\n    return a\r\n"
    assert "\r" not in out.content


async def test_mixed_endings_are_untouched_outside_the_edit(ctx: ToolContext, call_tool: CallTool,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"one\r\ntwo\nthree\r\nfour\n")
    await read(ctx, call_tool, "mixed.txt")
    await edit(ctx, call_tool, "mixed.txt", "three\nfour", "THREE\nFOUR")
    assert path.read_bytes() == b"one\r\ntwo\nTHREE\r\nFOUR\n"


async def test_missing_final_newline_is_preserved(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"first\nlast")
    await read(ctx, call_tool, "f.txt")
    await edit(ctx, call_tool, "f.txt", "first", "FIRST")
    assert path.read_bytes() == b"FIRST\nlast"
    await edit(ctx, call_tool, "f.txt", "last", "LAST")
    assert path.read_bytes() == b"FIRST\nLAST"


async def test_latin1_bytes_survive_outside_the_edit(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "legacy.c"
    original = b"/* Auteur: Fran\xe7ois \x81\x8d */\nint x = 1;\n/* fin \xe9t\xe9 */\n"
    path.write_bytes(original)
    await read(ctx, call_tool, "legacy.c")
    out = await edit(ctx, call_tool, "legacy.c", "int x = 1;", "int x = 2;")
    assert not out.is_error
    assert path.read_bytes() == original.replace(b"int x = 1;", b"int x = 2;")


async def test_utf8_with_stray_bytes_survives(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    original = "# Überschrift – ünïcödé\n".encode() + b"broken \xff byte\n" + b"value = 1\n"
    path.write_bytes(original)
    await read(ctx, call_tool, "notes.md")
    await edit(ctx, call_tool, "notes.md", "value = 1", "value = 2 ✅")
    assert path.read_bytes() == original.replace(b"value = 1", "value = 2 ✅".encode())


async def test_bom_and_utf16_are_preserved(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfkey=old\n")
    u16 = tmp_path / "u16.txt"
    u16.write_bytes(b"\xfe\xff" + "key=old\r\n".encode("utf-16-be"))
    for name in ("bom.txt", "u16.txt"):
        await read(ctx, call_tool, name)
        assert not (await edit(ctx, call_tool, name, "old", "new")).is_error
    assert bom.read_bytes() == b"\xef\xbb\xbfkey=new\n"
    assert u16.read_bytes() == b"\xfe\xff" + "key=new\r\n".encode("utf-16-be")


async def test_unencodable_replacement_is_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes(b"caf\xe9\n")
    await read(ctx, call_tool, "legacy.txt")
    out = await edit(ctx, call_tool, "legacy.txt", "café", "café ✅")
    assert out.is_error and "cannot represent" in out.content
    assert path.read_bytes() == b"caf\xe9\n"


async def test_mode_is_kept(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("echo 1\n")
    path.chmod(0o750)
    await read(ctx, call_tool, "run.sh")
    await edit(ctx, call_tool, "run.sh", "echo 1", "echo 2")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


async def test_missing_file_points_to_write_file(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text("")
    out = await edit(ctx, call_tool, "modul.py", "a", "b")
    assert out.is_error and "File not found: modul.py" in out.content and "write_file" in out.content
    assert "module.py" in out.content


async def test_empty_old_string_creates_a_missing_file(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    out = await edit(ctx, call_tool, "new/thing.txt", "", "hello\n")
    assert not out.is_error and out.content == "Created new/thing.txt (1 line)."
    assert (tmp_path / "new" / "thing.txt").read_text() == "hello\n"
    again = await edit(ctx, call_tool, "new/thing.txt", "", "more\n")
    assert again.is_error and "old_string is empty" in again.content


async def test_directory_and_binary_are_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert "directory" in (await edit(ctx, call_tool, "d", "a", "b")).content
    blob = tmp_path / "blob"
    blob.write_bytes(b"\x00abc")
    ctx.state.record_read(blob)  # as if something else had read it
    out = await edit(ctx, call_tool, "blob", "abc", "xyz")
    assert out.is_error and "binary" in out.content
    assert blob.read_bytes() == b"\x00abc"


async def test_preview_does_not_write(ctx: ToolContext, call_tool: CallTool, source: Path) -> None:
    await read(ctx, call_tool, "app.py")
    preview = await TOOL.preview(EditFileInput(path="app.py", old_string="import os", new_string="import sys"), ctx)
    assert preview == {"kind": "diff", "path": "app.py",
                       "diff": "--- a/app.py\n+++ b/app.py\n@@ -1,4 +1,4 @@\n-import os\n+import sys\n \n \n"
                               " def greet(name):\n"}
    assert source.read_text() == SOURCE


async def test_big_file_edit_near_the_end(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"row {i}\n" for i in range(1, 200_001)))
    await call_tool(READ, ctx, path="big.txt", offset=199_990)
    out = await edit(ctx, call_tool, "big.txt", "row 199995\n", "row 199995 changed\n")
    assert not out.is_error and "199995\trow 199995 changed" in out.content
    assert "@@ -199992,7 +199992,7 @@" in out.display["diff"]
    assert path.read_text().count("\n") == 200_000


async def test_symlinks_follow_the_resolved_path(make_ctx: MakeCtx, call_tool: CallTool, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    ctx = make_ctx(root)
    outside = tmp_path / "outside.cfg"
    outside.write_text("a=1\n")
    (root / "cfg").symlink_to(outside)
    target = TOOL.permission_target(EditFileInput(path="cfg", old_string="a", new_string="b"), ctx)
    assert target == FileAccess(paths=(str(outside),), write=True)
    await read(ctx, call_tool, "cfg")
    out = await edit(ctx, call_tool, "cfg", "a=1", "a=2")
    assert not out.is_error and out.content.startswith(f"Edited {outside} ")
    assert outside.read_text() == "a=2\n" and (root / "cfg").is_symlink()


async def test_preview_reports_an_unencodable_edit(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    from loom_engine.tools.base import ToolError

    (tmp_path / "l.txt").write_bytes(b"caf\xe9\n")
    await read(ctx, call_tool, "l.txt")
    with pytest.raises(ToolError, match="cannot represent"):
        await TOOL.preview(EditFileInput(path="l.txt", old_string="café", new_string="☕"), ctx)


async def test_line_ending_only_change_is_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    path.write_bytes(b"a\r\nb\r\n")
    await read(ctx, call_tool, "w.txt")
    out = await edit(ctx, call_tool, "w.txt", "a\r\n", "a\n")
    assert out.is_error and "exactly as it is" in out.content
    assert path.read_bytes() == b"a\r\nb\r\n"


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.text(alphabet="abcxyz é\t", min_size=1, max_size=12), min_size=1, max_size=12, unique=True),
       crlf=st.booleans(), final_newline=st.booleans(), delete=st.booleans(), data=st.data())
def test_edit_changes_only_the_matched_bytes(lines: list[str], crlf: bool, final_newline: bool, delete: bool,
                                             data: st.DataObject) -> None:
    """Lines replaced, or (an empty new_string) deleted with their line breaks."""
    from builtin_tools.edit_file import Edit, apply_edit

    newline = "\r\n" if crlf else "\n"
    text = newline.join(f"<{line}>" for line in lines) + (newline if final_newline else "")
    index = data.draw(st.integers(0, len(lines) - 1))
    span = data.draw(st.integers(1, len(lines) - index))
    old = "\n".join(f"<{line}>" for line in lines[index:index + span])  # the model sends \n
    new_lines = [] if delete else ["<NEW>", "<LINES>"]
    result, count = apply_edit(text, newline, Edit(old, "\n".join(new_lines)), "f")
    expected_lines = [f"<{line}>" for line in lines[:index]] + new_lines + \
        [f"<{line}>" for line in lines[index + span:]]
    assert count == 1
    assert result == newline.join(expected_lines) + (newline if final_newline and expected_lines else "")
