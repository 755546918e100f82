"""read_file with an offset past the end answers with the file's length as a note, not an
error: the model asked a fair question about a file that is shorter than it thought."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools.read_file import ReadFileTool
from loom_engine.tools.base import ToolContext

from .conftest import CallTool

TOOL = ReadFileTool()


@pytest.mark.parametrize(("content", "total", "phrase"), [
    (b"one\ntwo\nthree\n", 3, "3 lines"),
    (b"one\r\ntwo\r\nthree", 3, "3 lines"),  # CRLF, no final line break
    (b"only\n", 1, "1 line,"),
])
async def test_offset_past_the_end_is_a_note_with_the_length(ctx: ToolContext, call_tool: CallTool, tmp_path: Path,
                                                             content: bytes, total: int, phrase: str) -> None:
    (tmp_path / "notes.txt").write_bytes(content)
    out = await call_tool(TOOL, ctx, path="notes.txt", offset=40)
    assert not out.is_error, out.content
    assert out.content == (f"(No lines shown: notes.txt has {phrase.rstrip(',')}, so offset 40 is past its end. "
                           f"Call read_file with an offset between 1 and {total} to read it.)")
    assert phrase in out.content
    # The read counts: the model may go on to edit the file.
    assert ctx.state.was_read(tmp_path / "notes.txt")


async def test_the_line_just_past_the_end(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\nb\n")
    last = await call_tool(TOOL, ctx, path="a.txt", offset=2)
    assert last.content == "     2\tb"
    past = await call_tool(TOOL, ctx, path="a.txt", offset=3)
    assert not past.is_error and "a.txt has 2 lines, so offset 3 is past its end" in past.content
