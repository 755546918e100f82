"""apply_patch beyond the Codex corpus: moves, several hunks, stale context, all or nothing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builtin_tools.apply_patch as module
from builtin_tools._patch_format import PatchApplyError, PatchError, parse_patch
from builtin_tools.apply_patch import ApplyPatchInput, ApplyPatchTool, apply_patch_text
from builtin_tools.edit_file import EditFileTool
from builtin_tools.read_file import ReadFileTool
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import ToolContext, ToolError

from .conftest import CallTool, MakeCtx

TOOL = ApplyPatchTool()


def patch(*body: str) -> str:
    return "\n".join(("*** Begin Patch", *body, "*** End Patch")) + "\n"


MODULE = "".join(f"line {i}\n" for i in range(1, 31))


def test_move_with_changes_keeps_mode_and_removes_the_source(tmp_path: Path) -> None:
    src = tmp_path / "pkg" / "old.py"
    src.parent.mkdir()
    src.write_text("def f():\n    return 1\n")
    src.chmod(0o750)
    summary = apply_patch_text(patch("*** Update File: pkg/old.py", "*** Move to: lib/new.py", "@@ def f():",
                                     "-    return 1", "+    return 2"), tmp_path)
    assert summary == "Success. Updated the following files:\nM lib/new.py\n"
    dest = tmp_path / "lib" / "new.py"
    assert not src.exists() and dest.read_text() == "def f():\n    return 2\n"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o750


def test_several_hunks_in_one_file(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text(MODULE)
    apply_patch_text(patch("*** Update File: m.txt",
                           "@@", " line 2", "-line 3", "+LINE 3", " line 4",
                           "@@ line 14", " line 15", "+inserted after 15", " line 16",
                           "@@", " line 28", " line 29", "-line 30", "*** End of File"), tmp_path)
    expected = MODULE.replace("line 3\n", "LINE 3\n").replace("line 15\n", "line 15\ninserted after 15\n")
    assert (tmp_path / "m.txt").read_text() == expected.replace("line 30\n", "")


def test_context_that_no_longer_matches_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "m.txt").write_text(MODULE.replace("line 20", "line twenty"))
    text = patch("*** Update File: a.txt", "@@", "-alpha", "+ALPHA",
                 "*** Add File: new.txt", "+fresh",
                 "*** Update File: m.txt", "@@", "-line 2", "+LINE 2", "@@", " line 19", "-line 20", "+LINE 20")
    with pytest.raises(PatchApplyError) as caught:
        apply_patch_text(text, tmp_path)
    message = str(caught.value)
    assert message.startswith("Update File: m.txt, hunk 2 (patch line 12): these lines were not found after line 2:")
    assert "The closest text in the file starts at line 19" in message and "line twenty" in message
    assert (tmp_path / "a.txt").read_text() == "alpha\n"
    assert not (tmp_path / "new.txt").exists()
    assert "LINE 2" not in (tmp_path / "m.txt").read_text()


def test_missing_context_header_is_named(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text(MODULE)
    with pytest.raises(PatchApplyError, match=r"hunk 1 .*the context line '@@ def nowhere\(\):' was not found"):
        apply_patch_text(patch("*** Update File: m.txt", "@@ def nowhere():", "-line 1", "+x"), tmp_path)


def test_pure_addition_under_a_context_header_goes_after_it(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("class A:\n    pass\n\nclass B:\n    pass\n")
    apply_patch_text(patch("*** Update File: c.py", "@@ class B:", "+    x = 1"), tmp_path)
    assert (tmp_path / "c.py").read_text() == "class A:\n    pass\n\nclass B:\n    x = 1\n    pass\n"


def test_hunks_out_of_order_still_apply(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text(MODULE)
    apply_patch_text(patch("*** Update File: m.txt", "@@", "-line 25", "+LINE 25", "@@", "-line 5", "+LINE 5"),
                     tmp_path)
    assert (tmp_path / "m.txt").read_text() == MODULE.replace("line 25", "LINE 25").replace("line 5\n", "LINE 5\n")


def test_overlapping_hunks_are_refused(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text(MODULE)
    with pytest.raises(PatchApplyError, match="hunks 1 and 2 change overlapping lines"):
        apply_patch_text(patch("*** Update File: m.txt", "@@", " line 4", "-line 5", "+X",
                               "@@", "-line 4", "+Y"), tmp_path)
    assert (tmp_path / "m.txt").read_text() == MODULE


def test_end_of_file_marker_prefers_the_end(tmp_path: Path) -> None:
    (tmp_path / "r.txt").write_text("x\nmiddle\nx\n")
    apply_patch_text(patch("*** Update File: r.txt", "@@", "-x", "+y", "*** End of File"), tmp_path)
    assert (tmp_path / "r.txt").read_text() == "x\nmiddle\ny\n"


def test_unified_range_header_counts_as_no_context(tmp_path: Path) -> None:
    (tmp_path / "u.txt").write_text("a\nb\n")
    apply_patch_text(patch("*** Update File: u.txt", "@@ -1,2 +1,2 @@", " a", "-b", "+B"), tmp_path)
    assert (tmp_path / "u.txt").read_text() == "a\nB\n"


def test_heredoc_wrapper_and_crlf_patch_text(tmp_path: Path) -> None:
    (tmp_path / "h.txt").write_text("old\n")
    text = "<<'EOF'\r\n" + patch("*** Update File: h.txt", "@@", "-old", "+new").replace("\n", "\r\n") + "EOF\r\n"
    apply_patch_text(text, tmp_path)
    assert (tmp_path / "h.txt").read_bytes() == b"new\n"


def test_encoding_and_other_bytes_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    original = b"caf\xe9 \x81\r\nvalue = 1\r\nna\xefve\r\n"
    path.write_bytes(original)
    apply_patch_text(patch("*** Update File: legacy.txt", "@@", "-value = 1", "+value = 2"), tmp_path)
    assert path.read_bytes() == original.replace(b"value = 1", b"value = 2")


def test_binary_files_can_be_deleted_but_not_updated(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    with pytest.raises(PatchApplyError, match=r"Failed to update blob.bin: .*binary"):
        apply_patch_text(patch("*** Update File: blob.bin", "@@", "-x", "+y"), tmp_path)
    apply_patch_text(patch("*** Delete File: blob.bin"), tmp_path)
    assert not (tmp_path / "blob.bin").exists()


def test_update_after_delete_in_the_same_patch_fails(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("a\n")
    with pytest.raises(PatchApplyError, match="an earlier hunk of this patch deleted it"):
        apply_patch_text(patch("*** Delete File: d.txt", "*** Update File: d.txt", "@@", "-a", "+b"), tmp_path)
    assert (tmp_path / "d.txt").read_text() == "a\n"


def test_add_then_update_the_same_file(tmp_path: Path) -> None:
    apply_patch_text(patch("*** Add File: n.txt", "+one", "+two", "*** Update File: n.txt", "@@", "-two", "+2"),
                     tmp_path)
    assert (tmp_path / "n.txt").read_text() == "one\n2\n"


def test_disk_failure_half_way_rolls_back(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "plain").write_text("I am a file, not a folder\n")
    text = patch("*** Update File: a.txt", "@@", "-alpha", "+ALPHA", "*** Add File: fresh/dir/b.txt", "+b",
                 "*** Add File: plain/child.txt", "+c")
    with pytest.raises(PatchApplyError, match="restored"):
        apply_patch_text(text, tmp_path)
    assert (tmp_path / "a.txt").read_text() == "alpha\n"
    assert not (tmp_path / "fresh").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "plain"]


def test_rollback_restores_deleted_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "keep.txt").write_text("keep\n")
    (tmp_path / "gone.txt").write_text("gone\n")
    real_rename = module.os.rename
    calls: list[str] = []

    def flaky_rename(src: str, dst: str, **dir_fds: int) -> None:
        calls.append(src)
        if len(calls) == 2:  # a deletion sets the file aside by renaming it: the second one fails
            raise PermissionError(13, "Permission denied", src)
        real_rename(src, dst, **dir_fds)

    monkeypatch.setattr(module.os, "rename", flaky_rename)
    with pytest.raises(PatchApplyError, match="Permission denied"):
        apply_patch_text(patch("*** Delete File: gone.txt", "*** Delete File: keep.txt"), tmp_path)
    monkeypatch.undo()
    assert (tmp_path / "gone.txt").read_text() == "gone\n" and (tmp_path / "keep.txt").read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.txt", "keep.txt"]


def test_paths_may_be_absolute(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    apply_patch_text(patch(f"*** Add File: {elsewhere / 'abs.txt'}", "+x"), tmp_path / "elsewhere")
    assert (elsewhere / "abs.txt").read_text() == "x\n"


def test_parse_errors_are_patch_errors() -> None:
    with pytest.raises(PatchError, match="Invalid patch: The first line"):
        parse_patch("hello")
    with pytest.raises(PatchError, match="line 2: '\\*\\*\\* Add File:' names no file"):
        parse_patch(patch("*** Add File:", "+x"))


# ----------------------------------------------------------------------------- the tool

def test_permission_target_lists_every_resolved_path(make_ctx: MakeCtx, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    ctx = make_ctx(root)
    (root / "link").symlink_to(tmp_path)
    args = ApplyPatchInput(patch=patch("*** Add File: a.txt", "+x", "*** Delete File: ../out.txt",
                                       "*** Update File: b.txt", "*** Move to: link/c.txt", "@@", "-q", "+r",
                                       "*** Update File: a.txt", "@@", "-x", "+y", "*** Add File: /etc/evil", "+e"))
    assert TOOL.permission_target(args, ctx) == FileAccess(
        paths=(str(root / "a.txt"), str(tmp_path / "out.txt"), str(root / "b.txt"), str(tmp_path / "c.txt"),
               "/etc/evil"), write=True)
    assert TOOL.permission_target(ApplyPatchInput(patch="nonsense"), ctx) == FileAccess(paths=(), write=True)


async def test_run_reports_errors_for_the_model(ctx: ToolContext, call_tool: CallTool) -> None:
    out = await call_tool(TOOL, ctx, patch=patch("*** Frobnicate File: x"))
    assert out.is_error
    assert out.content.startswith("apply_patch failed. Invalid patch hunk on line 2: '*** Frobnicate File: x' "
                                  "is not a valid hunk header.")
    assert out.content.endswith("No files were changed.")
    empty = await call_tool(TOOL, ctx, patch=patch())
    assert empty.is_error and "no file operations" in empty.content


async def test_run_writes_and_shows_a_combined_diff(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\nb\n")
    (tmp_path / "old.txt").write_text("bye\n")
    out = await call_tool(TOOL, ctx, patch=patch("*** Update File: m.txt", "@@", " a", "-b", "+B",
                                                 "*** Delete File: old.txt", "*** Add File: n.txt", "+hi"))
    assert not out.is_error
    assert out.content == "Success. Updated the following files:\nA n.txt\nM m.txt\nD old.txt"
    assert out.display == {"kind": "diff", "path": "3 files", "diff": (
        "--- a/m.txt\n+++ b/m.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
        "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n")}


async def test_preview_does_not_write(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    preview = await TOOL.preview(ApplyPatchInput(patch=patch("*** Update File: m.txt", "@@", "-a", "+b")), ctx)
    assert preview == {"kind": "diff", "path": "m.txt", "diff": "--- a/m.txt\n+++ b/m.txt\n@@ -1 +1 @@\n-a\n+b\n"}
    assert (tmp_path / "m.txt").read_text() == "a\n"
    # A patch that cannot apply: the error run() would give, so the call fails before asking.
    with pytest.raises(ToolError, match="these lines were not found"):
        await TOOL.preview(ApplyPatchInput(patch=patch("*** Update File: m.txt", "@@", "-zzz", "+b")), ctx)


async def test_read_records_follow_the_patch(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    (tmp_path / "d.txt").write_text("d\n")
    await call_tool(ReadFileTool(), ctx, path="m.txt")
    await call_tool(ReadFileTool(), ctx, path="d.txt")
    await call_tool(TOOL, ctx, patch=patch("*** Update File: m.txt", "@@", "-a", "+b", "*** Delete File: d.txt",
                                           "*** Add File: n.txt", "+n"))
    assert not ctx.state.was_read(tmp_path / "d.txt")
    # The patched file and the added one can be edited right away.
    for name, old in (("m.txt", "b"), ("n.txt", "n")):
        out = await call_tool(EditFileTool(), ctx, path=name, old_string=old, new_string="z")
        assert not out.is_error, out.content


async def test_symlinked_file_is_patched_through_the_link(make_ctx: MakeCtx, call_tool: CallTool,
                                                          tmp_path: Path) -> None:
    root = tmp_path / "ws"
    ctx = make_ctx(root)
    (root / "real.txt").write_text("a\n")
    (root / "alias.txt").symlink_to(root / "real.txt")
    out = await call_tool(TOOL, ctx, patch=patch("*** Update File: alias.txt", "@@", "-a", "+b"))
    assert not out.is_error
    assert (root / "alias.txt").is_symlink() and (root / "real.txt").read_text() == "b\n"


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.text(alphabet="abc xyz", min_size=1, max_size=8).map(str.strip).filter(bool),
                      min_size=1, max_size=15, unique=True),
       crlf=st.booleans(), data=st.data())
def test_update_property(lines: list[str], crlf: bool, data: st.DataObject) -> None:
    from builtin_tools._patch_plan import apply_chunks

    newline = "\r\n" if crlf else "\n"
    text = "".join(line + newline for line in lines)
    index = data.draw(st.integers(0, len(lines) - 1))
    span = data.draw(st.integers(0, len(lines) - index))
    added = data.draw(st.lists(st.sampled_from(["NEW", "MORE", ""]), max_size=3))
    body = ["@@"]
    if index > 0:
        body.append(" " + lines[index - 1])
    body += ["-" + line for line in lines[index:index + span]] + ["+" + line for line in added]
    if index + span < len(lines):
        body.append(" " + lines[index + span])
    if not span and not added:
        return
    chunks = parse_patch(patch("*** Update File: f", *body))[0].chunks  # type: ignore[union-attr]
    expected = lines[:index] + added + lines[index + span:]
    assert apply_chunks(text, chunks, "f") == "".join(line + newline for line in expected)
