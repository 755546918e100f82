"""multi_edit: edits in order, all or nothing, sharing edit_file's rules."""

from __future__ import annotations

from pathlib import Path

from builtin_tools.multi_edit import MultiEditInput, MultiEditTool
from builtin_tools.read_file import ReadFileTool
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import ToolContext

from .conftest import CallTool

TOOL = MultiEditTool()
READ = ReadFileTool()


def op(old: str, new: str, replace_all: bool = False) -> dict[str, object]:
    return {"old_string": old, "new_string": new, "replace_all": replace_all}


async def test_edits_apply_in_order(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("alpha = 1\nbeta = 2\ngamma = 3\n")
    await call_tool(READ, ctx, path="m.py")
    out = await call_tool(TOOL, ctx, path="m.py", edits=[
        op("alpha = 1", "alpha = 10"),
        op("alpha = 10\nbeta", "alpha = 10\n# note\nbeta"),  # sees the first edit's result
        op("= 3", "= 30"),
    ])
    assert not out.is_error
    assert path.read_text() == "alpha = 10\n# note\nbeta = 2\ngamma = 30\n"
    assert out.content.startswith("Edited m.py (3 replacements).")
    assert "     2\t# note" in out.content and "     4\tgamma = 30" in out.content
    assert out.display["diff"] == ("--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,4 @@\n-alpha = 1\n+alpha = 10\n"
                                   "+# note\n beta = 2\n-gamma = 3\n+gamma = 30\n")


async def test_all_or_nothing_names_the_failing_edit(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = 1\nb = 2\nb = 2\n")
    await call_tool(READ, ctx, path="m.py")
    out = await call_tool(TOOL, ctx, path="m.py", edits=[op("a = 1", "a = 9"), op("b = 2", "b = 3"),
                                                         op("zzz", "y")])
    assert out.is_error
    assert out.content.startswith("Edit 2 of 3 failed: old_string occurs 2 times in m.py (at lines 2, 3).")
    assert "No edits were applied" in out.content
    assert path.read_text() == "a = 1\nb = 2\nb = 2\n"


async def test_text_changed_by_an_earlier_edit_gets_a_hint(ctx: ToolContext, call_tool: CallTool,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("value = compute(first)\n")
    await call_tool(READ, ctx, path="m.py")
    out = await call_tool(TOOL, ctx, path="m.py", edits=[op("compute", "calculate"), op("compute(first)", "x")])
    assert out.is_error and out.content.startswith("Edit 2 of 2 failed: old_string was not found")
    assert "an earlier edit in this call may have changed that text" in out.content
    assert path.read_text() == "value = compute(first)\n"


async def test_replace_all_inside_multi_edit(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_bytes(b"x x\r\nx\r\n")
    await call_tool(READ, ctx, path="m.txt")
    out = await call_tool(TOOL, ctx, path="m.txt", edits=[op("x", "y", True), op("y y\ny", "z\nz")])
    assert not out.is_error
    assert path.read_bytes() == b"z\r\nz\r\n"


async def test_read_first_rule_applies(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    out = await call_tool(TOOL, ctx, path="m.txt", edits=[op("a", "b")])
    assert out.is_error and "has not been read" in out.content


async def test_new_file_from_an_empty_first_edit(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    out = await call_tool(TOOL, ctx, path="fresh.txt", edits=[op("", "one\ntwo\n"), op("two", "TWO")])
    assert not out.is_error and out.content == "Created fresh.txt (2 lines)."
    assert (tmp_path / "fresh.txt").read_text() == "one\nTWO\n"


async def test_identical_edit_is_refused_with_its_number(ctx: ToolContext, call_tool: CallTool,
                                                         tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\nb\n")
    await call_tool(READ, ctx, path="m.txt")
    out = await call_tool(TOOL, ctx, path="m.txt", edits=[op("a", "A"), op("b", "b")])
    assert out.is_error and out.content.startswith("Edit 2 of 2 failed: old_string and new_string are identical")


async def test_preview_and_target(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    await call_tool(READ, ctx, path="m.txt")
    args = MultiEditInput.model_validate({"path": "m.txt", "edits": [op("a", "b")]})
    assert TOOL.permission_target(args, ctx) == FileAccess(paths=(str(tmp_path / "m.txt"),), write=True)
    preview = await TOOL.preview(args, ctx)
    assert preview is not None and "-a\n+b\n" in preview["diff"]
    assert (tmp_path / "m.txt").read_text() == "a\n"


def test_schema_requires_at_least_one_edit() -> None:
    schema = MultiEditInput.model_json_schema()
    assert schema["properties"]["edits"]["minItems"] == 1
    edit_schema = schema["$defs"]["EditOperation"]
    assert set(edit_schema["properties"]) == {"old_string", "new_string", "replace_all"}
    assert edit_schema["required"] == ["old_string", "new_string"]


async def test_edits_that_cancel_out_write_nothing(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    await call_tool(READ, ctx, path="m.txt")
    out = await call_tool(TOOL, ctx, path="m.txt", edits=[op("a", "b"), op("b", "a")])
    # Edit 2 undoes edit 1 by editing the text edit 1 wrote: refused as such.
    assert out.is_error and "Edit 2 of 2 failed: its old_string lies inside the new_string of edit 1" in out.content
    assert (tmp_path / "m.txt").read_text() == "a\n"


async def test_an_edit_of_text_an_earlier_edit_wrote_is_refused(ctx: ToolContext, call_tool: CallTool,
                                                                tmp_path: Path) -> None:
    # Edit 3 changes "retries = 5", which only edit 1 writes: it edits the call's own text.
    path = tmp_path / "m.py"
    path.write_text("retries = 3\ntimeout = 10\n")
    await call_tool(READ, ctx, path="m.py")
    out = await call_tool(TOOL, ctx, path="m.py", edits=[op("retries = 3", "retries = 5"),
                                                         op("timeout = 10", "timeout = 20"),
                                                         op("retries = 5", "retries = 7")])
    assert out.is_error
    assert out.content.startswith("Edit 3 of 3 failed: its old_string lies inside the new_string of edit 1, so "
                                  "it would edit text this call itself writes.")
    assert "No edits were applied" in out.content
    assert path.read_text() == "retries = 3\ntimeout = 10\n"
