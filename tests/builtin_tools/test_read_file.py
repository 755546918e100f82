"""read_file on real files in a temp workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builtin_tools.read_file import MAX_LINE_CHARS, ReadFileInput, ReadFileTool
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import ToolContext

from .conftest import CallTool, MakeCtx

TOOL = ReadFileTool()


async def test_numbered_lines_cat_n_style(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n\n    indented\n")
    out = await call_tool(TOOL, ctx, path="a.py")
    assert not out.is_error
    assert out.content == "     1\timport os\n     2\t\n     3\t    indented"


async def test_records_the_read(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("x\n")
    assert not ctx.state.was_read(path)
    await call_tool(TOOL, ctx, path=str(path))
    assert ctx.state.was_read(path) and not ctx.state.changed_since_read(path)


async def test_offset_and_limit_with_a_note_on_what_follows(ctx: ToolContext, call_tool: CallTool,
                                                            tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    out = await call_tool(TOOL, ctx, path="f.txt", offset=3, limit=2)
    lines, note = out.content.split("\n\n")
    assert lines == "     3\tl3\n     4\tl4"
    assert "lines 3-4 of 10" in note and "offset=5" in note
    last = await call_tool(TOOL, ctx, path="f.txt", offset=9, limit=5)
    assert last.content == "     9\tl9\n    10\tl10"


async def test_offset_zero_means_the_start(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("first\n")
    assert (await call_tool(TOOL, ctx, path="f.txt", offset=0)).content == "     1\tfirst"


async def test_offset_past_the_end(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\n")
    out = await call_tool(TOOL, ctx, path="f.txt", offset=5)
    assert not out.is_error and "has 2 lines" in out.content and "between 1 and 2" in out.content


async def test_long_lines_are_cut_with_a_marker(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("x" * 5000 + "\nshort\n")
    out = await call_tool(TOOL, ctx, path="min.js")
    first, second = out.content.split("\n")
    assert first == "     1\t" + "x" * MAX_LINE_CHARS + "... [line truncated: 3,000 more characters]"
    assert second == "     2\tshort"


async def test_output_budget_stops_early_and_says_where_to_continue(ctx: ToolContext, call_tool: CallTool,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("".join(f"{i:05d}" + "y" * 995 + "\n" for i in range(1, 501)))
    out = await call_tool(TOOL, ctx, path="wide.txt")
    assert len(out.content) < 60_000
    body, note = out.content.rsplit("\n\n", 1)
    shown = body.count("\n") + 1
    assert 10 < shown < 500
    assert f"offset={shown + 1}" in note and "output size limit" in note


async def test_big_file_window(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("".join(f"entry {i}\n" for i in range(1, 200_001)))
    out = await call_tool(TOOL, ctx, path="big.log", offset=150_000, limit=3)
    body, note = out.content.split("\n\n")
    assert body == "150000\tentry 150000\n150001\tentry 150001\n150002\tentry 150002"
    assert "of 200000" in note and "offset=150003" in note
    tail = await call_tool(TOOL, ctx, path="big.log", offset=199_999)
    assert tail.content == "199999\tentry 199999\n200000\tentry 200000"


async def test_default_read_of_big_file_shows_2000_lines(ctx: ToolContext, call_tool: CallTool,
                                                        tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 200_001)))
    out = await call_tool(TOOL, ctx, path="big.txt")
    body, note = out.content.split("\n\n")
    assert body.count("\n") == 1999 and body.endswith("  2000\t2000")
    assert "lines 1-2000 of 200000" in note and "offset=2001" in note


async def test_crlf_and_lone_cr_lines(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "win.txt").write_bytes(b"one\r\ntwo\r\nthree")
    assert (await call_tool(TOOL, ctx, path="win.txt")).content == "     1\tone\n     2\ttwo\n     3\tthree"
    (tmp_path / "mac.txt").write_bytes(b"a\rb\r")
    assert (await call_tool(TOOL, ctx, path="mac.txt")).content == "     1\ta\n     2\tb"


async def test_non_utf8_file_is_decoded_and_named(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "legacy.txt").write_bytes("café\n".encode("cp1252"))
    out = await call_tool(TOOL, ctx, path="legacy.txt")
    assert out.content.startswith("     1\tcafé\n\n")
    assert "Windows-1252" in out.content


async def test_utf16_file(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "u16.txt").write_bytes(b"\xff\xfe" + "héllo\r\nwörld\r\n".encode("utf-16-le"))
    out = await call_tool(TOOL, ctx, path="u16.txt")
    assert out.content.startswith("     1\théllo\n     2\twörld\n\n") and "UTF-16 LE with BOM" in out.content


async def test_empty_file(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    out = await call_tool(TOOL, ctx, path="empty")
    assert not out.is_error and "empty" in out.content
    assert ctx.state.was_read(tmp_path / "empty")


async def test_binary_file_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\x00\x01\x02\x03" * 100)
    out = await call_tool(TOOL, ctx, path="data.bin")
    assert out.is_error and "binary" in out.content and "400 bytes" in out.content
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    out = await call_tool(TOOL, ctx, path="logo.png")
    assert out.is_error and "PNG image" in out.content
    assert not ctx.state.was_read(tmp_path / "logo.png")


async def test_directory_gets_an_ls_hint(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    out = await call_tool(TOOL, ctx, path="src")
    assert out.is_error and "directory" in out.content and "ls" in out.content


async def test_missing_file_suggests_similar_names(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.py").write_text("")
    out = await call_tool(TOOL, ctx, path="src/confg.py")
    assert out.is_error and "File not found: src/confg.py" in out.content
    assert str(tmp_path / "src" / "config.py") in out.content
    out = await call_tool(TOOL, ctx, path="nowhere/x.py")
    assert out.is_error and "does not exist either" in out.content


async def test_fifo_is_refused_without_blocking(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = await call_tool(TOOL, ctx, path="pipe")
    assert out.is_error and "not a regular file" in out.content


async def test_symlinks_in_and_out_of_the_workspace(make_ctx: MakeCtx, call_tool: CallTool, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    ctx = make_ctx(root)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (root / "real.txt").write_text("inside\n")
    (root / "link_out").symlink_to(outside)
    (root / "link_in").symlink_to(root / "real.txt")

    target = TOOL.permission_target(ReadFileInput(path="link_out"), ctx)
    assert target == FileAccess(paths=(str(outside),), write=False)
    assert TOOL.permission_target(ReadFileInput(path="link_in"), ctx).paths == (str(root / "real.txt"),)
    assert TOOL.permission_target(ReadFileInput(path="../outside.txt"), ctx).paths == (str(outside),)

    assert (await call_tool(TOOL, ctx, path="link_in")).content == "     1\tinside"
    assert ctx.state.was_read(root / "real.txt")
    # Permission is not the tool's job; following the link outside must still work.
    assert (await call_tool(TOOL, ctx, path="link_out")).content == "     1\tsecret"


def test_tool_flags() -> None:
    assert TOOL.is_read_only and TOOL.is_concurrency_safe
    schema = ReadFileInput.model_json_schema()
    assert set(schema["properties"]) == {"path", "offset", "limit"}
    assert schema["properties"]["offset"]["default"] == 1 and schema["properties"]["limit"]["default"] == 2000
    assert all(prop.get("description") for prop in schema["properties"].values())


@pytest.mark.parametrize("bad", [{"path": "a", "offset": -1}, {"path": "a", "limit": 0}, {"path": "a", "x": 1}])
def test_invalid_arguments_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReadFileInput.model_validate(bad)


async def test_files_too_big_to_load_are_streamed(ctx: ToolContext, call_tool: CallTool, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import builtin_tools.read_file as module

    monkeypatch.setattr(module, "LARGE_FILE_BYTES", 100)
    (tmp_path / "huge.log").write_bytes(b"".join(b"row %d\r\n" % i for i in range(1, 1001)))
    out = await call_tool(TOOL, ctx, path="huge.log", offset=10, limit=2)
    body, note = out.content.split("\n\n")
    assert body == "    10\trow 10\n    11\trow 11"
    assert "More lines follow" in note and "offset=12" in note
    end = await call_tool(TOOL, ctx, path="huge.log", offset=999)
    assert end.content == "   999\trow 999\n  1000\trow 1000"
    past = await call_tool(TOOL, ctx, path="huge.log", offset=2000)
    assert not past.is_error and "has 1000 lines" in past.content
    (tmp_path / "huge.bin").write_bytes(b"\x00" * 500)
    assert (await call_tool(TOOL, ctx, path="huge.bin")).is_error


def test_file_tools_satisfy_the_tool_protocol() -> None:
    from builtin_tools.apply_patch import ApplyPatchTool
    from builtin_tools.edit_file import EditFileTool
    from builtin_tools.multi_edit import MultiEditTool
    from builtin_tools.write_file import WriteFileTool
    from loom_engine.tools.base import Tool, tool_spec

    expected = {"read_file": {"path", "offset", "limit"}, "write_file": {"path", "content"},
                "edit_file": {"path", "old_string", "new_string", "replace_all"},
                "multi_edit": {"path", "edits"}, "apply_patch": {"patch"}}
    for tool in (ReadFileTool(), WriteFileTool(), EditFileTool(), MultiEditTool(), ApplyPatchTool()):
        assert isinstance(tool, Tool)
        spec = tool_spec(tool)
        assert set(spec.input_schema["properties"]) == expected[spec.name]
        assert all(p.get("description") for p in spec.input_schema["properties"].values())
        assert len(spec.description) > 100
        writes = spec.name != "read_file"
        assert tool.is_read_only is not writes and tool.is_concurrency_safe is not writes


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
@pytest.mark.parametrize("data", [
    b"a\r\nb\r\nc\r\n",  # CRLF: a chunk may end between \r and \n
    b"one\rtwo\rthree",  # old Mac endings, no final break
    b"x\n\n\ny",  # empty lines
    "é\nnaïve\n€uro\n".encode(),  # multi-byte characters split across chunks
    b"\xef\xbb\xbfbom\nline\n",  # UTF-8 BOM
    "utf16\r\nline\r\n".encode("utf-16"),  # UTF-16 with BOM, CRLF
    b"caf\xe9\nna\xefve\n",  # Windows-1252
    b"\r\r\n\n",  # \r, \r\n, \n
])
async def test_streamed_lines_match_the_whole_file_split(ctx: ToolContext, call_tool: CallTool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, chunk: int,
                                                          data: bytes) -> None:
    """Reading chunk by chunk gives the lines, numbers and total of splitting the whole text."""
    import builtin_tools.read_file as module
    from builtin_tools._files.text import detect_encoding, split_lines, strip_ending

    monkeypatch.setattr(module, "_CHUNK_BYTES", chunk)
    (tmp_path / "f.txt").write_bytes(data)
    expected = [strip_ending(line) for line in split_lines(detect_encoding(data).decode(data))]
    for offset in range(1, len(expected) + 1):
        out = await call_tool(TOOL, ctx, path="f.txt", offset=offset, limit=2)
        shown = expected[offset - 1:offset + 1]
        body = out.content.split("\n\n(")[0]
        assert body == "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(shown, offset)), (offset, out.content)
        if offset + 1 < len(expected):
            assert f"of {len(expected)};" in out.content or f"of {len(expected)}." in out.content
    past = await call_tool(TOOL, ctx, path="f.txt", offset=len(expected) + 1)
    assert not past.is_error and f"has {len(expected)} lines" in past.content
