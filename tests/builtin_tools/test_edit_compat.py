"""edit_file and multi_edit with what models commonly send: an empty new_string to delete
lines (their line breaks go too), and straight quotes for a file's curly ones (the file
keeps its own quote characters). Exact matches always win; ambiguity still errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools.edit_file import EditFileInput, EditFileTool
from builtin_tools.multi_edit import MultiEditTool
from builtin_tools.read_file import ReadFileTool
from loom_engine.tools.base import ToolContext, ToolOutput

from .conftest import CallTool

EDIT = EditFileTool()
MULTI = MultiEditTool()
READ = ReadFileTool()


async def edit(ctx: ToolContext, call_tool: CallTool, tmp_path: Path, name: str, content: bytes,
               old: str, new: str, replace_all: bool = False) -> tuple[ToolOutput, bytes]:
    (tmp_path / name).write_bytes(content)
    assert not (await call_tool(READ, ctx, path=name)).is_error
    out = await call_tool(EDIT, ctx, path=name, old_string=old, new_string=new, replace_all=replace_all)
    return out, (tmp_path / name).read_bytes()


# --- deleting lines ----------------------------------------------------------------------

@pytest.mark.parametrize(("content", "old", "expected"), [
    # Whole lines: their line breaks go too.
    # one line in the middle
    (b"import os\nimport sys\nimport re\n", "import sys", b"import os\nimport re\n"),
    # several lines
    (b"a = 1\n# TODO remove\n# and this\nb = 2\n", "# TODO remove\n# and this", b"a = 1\nb = 2\n"),
    # the first line
    (b"#!/bin/sh\necho hi\n", "#!/bin/sh", b"echo hi\n"),
    # CRLF file, the model sends \n
    (b"one\r\ntwo\r\nthree\r\n", "two", b"one\r\nthree\r\n"),
    (b"one\r\ntwo\r\nthree\r\nfour\r\n", "two\nthree", b"one\r\nfour\r\n"),
    # CRLF file, the model sends \r\n
    (b"one\r\ntwo\r\nthree\r\n", "one\r\ntwo", b"three\r\n"),
    # a file whose last line has no line break: a middle line, then the last line
    (b"one\ntwo\nthree", "two", b"one\nthree"),
    (b"one\ntwo\nthree", "three", b"one\ntwo"),
    (b"one\r\ntwo\r\nthree", "two\nthree", b"one"),
    # Part of a line, or old_string already ends with the break: nothing more goes.
    # part of a line: the line stays, with its break
    (b"x = 1; debug()\ny = 2\n", "; debug()", b"x = 1\ny = 2\n"),
    (b"x = 1  # note\ny = 2\n", "x = 1", b"  # note\ny = 2\n"),
    # old_string already holds the line break
    (b"a\nb\nc\n", "b\n", b"a\nc\n"),
    # a blank line deleted with the break the model included
    (b"a\n\n\nb\n", "\n\n", b"a\nb\n"),
])
async def test_deleting_with_an_empty_new_string(ctx: ToolContext, call_tool: CallTool, tmp_path: Path,
                                                 content: bytes, old: str, expected: bytes) -> None:
    out, written = await edit(ctx, call_tool, tmp_path, "f.txt", content, old, "")
    assert not out.is_error, out.content
    assert written == expected


async def test_the_report_shows_no_blank_line_where_the_lines_were(ctx: ToolContext, call_tool: CallTool,
                                                                   tmp_path: Path) -> None:
    out, _ = await edit(ctx, call_tool, tmp_path, "m.py", b"import os\nimport sys\nimport re\n", "import sys", "")
    assert out.content == ("Edited m.py (1 replacement). The changed region now reads:\n"
                           "     1\timport os\n     2\timport re")
    assert out.display["diff"] == "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,2 @@\n import os\n-import sys\n import re\n"


async def test_replace_all_deletes_every_matching_line(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    content = b"print('a')\nkeep()\nprint('a')\nprint('a')\nkeep()\nprint('a')"
    out, written = await edit(ctx, call_tool, tmp_path, "f.py", content, "print('a')", "", replace_all=True)
    assert not out.is_error and out.content.startswith("Edited f.py (4 replacements).")
    assert written == b"keep()\nkeep()"


async def test_multi_edit_deletes_lines_the_same_way(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"import os\r\nimport sys\r\n\r\ndef f():\r\n    print(\"debug\")\r\n    return 1")
    await call_tool(READ, ctx, path="m.py")
    out = await call_tool(MULTI, ctx, path="m.py", edits=[
        {"old_string": "import sys", "new_string": ""},
        {"old_string": '    print("debug")', "new_string": ""},
    ])
    assert not out.is_error, out.content
    assert path.read_bytes() == b"import os\r\n\r\ndef f():\r\n    return 1"


# --- quotes ------------------------------------------------------------------------------

async def test_straight_quotes_match_curly_ones_and_the_file_keeps_its_own(ctx: ToolContext, call_tool: CallTool,
                                                                          tmp_path: Path) -> None:
    content = "title = “Loom’s guide”\nnote = ‘draft’\n".encode()
    out, written = await edit(ctx, call_tool, tmp_path, "doc.txt", content,
                              "title = \"Loom's guide\"", "title = \"Loom's short guide\"")
    assert not out.is_error, out.content
    assert written.decode() == "title = “Loom’s short guide”\nnote = ‘draft’\n"
    assert "straight and curly quotes taken as the same" in out.content
    assert "     1\ttitle = “Loom’s short guide”" in out.content


async def test_new_quotes_follow_the_files_style(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    content = "She said “hi” and ‘bye’.\n".encode()
    out, written = await edit(ctx, call_tool, tmp_path, "s.txt", content, "She said \"hi\" and 'bye'.",
                              "She said \"hello\" and 'so long'. Then: \"We're done\" (it's 'over').")
    assert not out.is_error, out.content
    assert written.decode() == "She said “hello” and ‘so long’. Then: “We’re done” (it’s ‘over’).\n"


async def test_a_kind_of_quote_the_match_writes_straight_stays_straight(ctx: ToolContext, call_tool: CallTool,
                                                                        tmp_path: Path) -> None:
    # Code with curly apostrophes in a message but straight double quotes around strings.
    content = 'msg = "It’s done"\n'.encode()
    out, written = await edit(ctx, call_tool, tmp_path, "m.py", content, 'msg = "It\'s done"',
                              'msg = "It\'s all done" + "it\'s"')
    assert not out.is_error, out.content
    assert written.decode() == 'msg = "It’s all done" + "it’s"\n'


async def test_an_exact_match_wins_over_a_curly_one(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    content = 'a = "x"\nb = “x”\n'.encode()
    out, written = await edit(ctx, call_tool, tmp_path, "f.txt", content, '"x"', '"y"')
    assert not out.is_error, out.content
    assert written.decode() == 'a = "y"\nb = “x”\n'
    assert "curly" not in out.content


async def test_several_curly_matches_are_still_ambiguous(ctx: ToolContext, call_tool: CallTool,
                                                         tmp_path: Path) -> None:
    content = "“x”\n“x”\n".encode()
    out, written = await edit(ctx, call_tool, tmp_path, "f.txt", content, '"x"', '"y"')
    assert out.is_error and "occurs 2 times" in out.content and "lines 1, 2" in out.content
    assert written == content
    out, written = await edit(ctx, call_tool, tmp_path, "f.txt", content, '"x"', '"y"', replace_all=True)
    assert not out.is_error and written.decode() == "“y”\n“y”\n"


async def test_no_match_even_with_quotes_folded_is_still_an_error(ctx: ToolContext, call_tool: CallTool,
                                                                  tmp_path: Path) -> None:
    content = "say “hello”\n".encode()
    out, written = await edit(ctx, call_tool, tmp_path, "f.txt", content, "say 'hello'", "say 'bye'")
    assert out.is_error and "was not found" in out.content
    assert written == content


async def test_curly_quotes_crlf_and_no_final_newline_together(ctx: ToolContext, call_tool: CallTool,
                                                               tmp_path: Path) -> None:
    content = "# Notes\r\nThe “fast” path isn’t default.\r\nObsolete line\r\nLast “line”".encode()
    (tmp_path / "notes.md").write_bytes(content)
    await call_tool(READ, ctx, path="notes.md")
    out = await call_tool(MULTI, ctx, path="notes.md", edits=[
        {"old_string": "The \"fast\" path isn't default.\nObsolete line",
         "new_string": "The \"fast\" path isn't default."},
        {"old_string": "Last \"line\"", "new_string": "Last \"line\", really"},
        {"old_string": "# Notes", "new_string": ""},
    ])
    assert not out.is_error, out.content
    assert (tmp_path / "notes.md").read_bytes() == "The “fast” path isn’t default.\r\nLast “line”, really".encode()


async def test_the_permission_preview_shows_what_is_written(ctx: ToolContext, call_tool: CallTool,
                                                            tmp_path: Path) -> None:
    content = "intro\r\n“Quoted” line\r\nremove me\r\nend".encode()
    (tmp_path / "p.txt").write_bytes(content)
    await call_tool(READ, ctx, path="p.txt")
    args = {"path": "p.txt", "old_string": '"Quoted" line\nremove me', "new_string": '"Quoted" text'}
    preview = await EDIT.preview(EditFileInput(**args), ctx)
    assert preview is not None
    assert preview["diff"] == ("--- a/p.txt\n+++ b/p.txt\n@@ -1,4 +1,3 @@\n intro\n-“Quoted” line\n-remove me\n"
                               "+“Quoted” text\n end\n\\ No newline at end of file\n")
    out = await call_tool(EDIT, ctx, **args)
    assert not out.is_error and out.display == preview
    assert (tmp_path / "p.txt").read_bytes() == "intro\r\n“Quoted” text\r\nend".encode()
    # And a deletion: the preview shows the line gone, as the file then is.
    await call_tool(READ, ctx, path="p.txt")
    deletion = {"path": "p.txt", "old_string": "“Quoted” text", "new_string": ""}
    preview = await EDIT.preview(EditFileInput(**deletion), ctx)
    assert preview is not None
    assert preview["diff"] == ("--- a/p.txt\n+++ b/p.txt\n@@ -1,3 +1,2 @@\n intro\n-“Quoted” text\n end\n"
                               "\\ No newline at end of file\n")
    assert (await call_tool(EDIT, ctx, **deletion)).display == preview
    assert (tmp_path / "p.txt").read_bytes() == b"intro\r\nend"

