"""write_file on real files in a temp workspace."""

from __future__ import annotations

import stat
from pathlib import Path

from builtin_tools.read_file import ReadFileTool
from builtin_tools.write_file import WriteFileInput, WriteFileTool
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import ToolContext

from .conftest import CallTool, MakeCtx

TOOL = WriteFileTool()
READ = ReadFileTool()


async def test_creates_a_file_and_its_parents(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    out = await call_tool(TOOL, ctx, path="pkg/sub/mod.py", content="a = 1\nb = 2\n")
    assert not out.is_error
    assert out.content == "Created pkg/sub/mod.py (2 lines)."
    assert (tmp_path / "pkg" / "sub" / "mod.py").read_text() == "a = 1\nb = 2\n"
    assert out.display == {"kind": "diff", "path": "pkg/sub/mod.py",
                           "diff": "--- /dev/null\n+++ b/pkg/sub/mod.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"}
    # It wrote the whole content, so it may overwrite it again without a read.
    again = await call_tool(TOOL, ctx, path="pkg/sub/mod.py", content="a = 3\n")
    assert again.content == "Overwrote pkg/sub/mod.py (1 line)."


async def test_overwrite_without_read_is_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("precious\n")
    out = await call_tool(TOOL, ctx, path="keep.txt", content="gone\n")
    assert out.is_error and "has not been read" in out.content and "read_file" in out.content
    assert (tmp_path / "keep.txt").read_text() == "precious\n"


async def test_overwrite_after_read_keeps_the_mode(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o754)
    await call_tool(READ, ctx, path="run.sh")
    out = await call_tool(TOOL, ctx, path="run.sh", content="#!/bin/sh\necho new\n")
    assert out.content == "Overwrote run.sh (2 lines)."
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o754
    assert "-echo old\n+echo new\n" in out.display["diff"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


async def test_changed_since_read_is_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("v1\n")
    await call_tool(READ, ctx, path="f.txt")
    path.write_text("v2 by the user\n")
    out = await call_tool(TOOL, ctx, path="f.txt", content="v3\n")
    assert out.is_error and "changed on disk" in out.content and "read_file again" in out.content
    assert path.read_text() == "v2 by the user\n"


async def test_crlf_file_stays_crlf(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    await call_tool(READ, ctx, path="win.txt")
    await call_tool(TOOL, ctx, path="win.txt", content="uno\ndos\ntres")
    assert path.read_bytes() == b"uno\r\ndos\r\ntres"


async def test_encoding_of_an_existing_file_is_kept(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes("café\n".encode("cp1252"))
    await call_tool(READ, ctx, path="legacy.txt")
    await call_tool(TOOL, ctx, path="legacy.txt", content="crème brûlée\n")
    assert path.read_bytes() == "crème brûlée\n".encode("cp1252")
    out = await call_tool(TOOL, ctx, path="legacy.txt", content="emoji ✅\n")
    assert out.is_error and "Windows-1252" in out.content
    assert path.read_bytes() == "crème brûlée\n".encode("cp1252")


async def test_preview_shows_the_diff_without_writing(ctx: ToolContext, tmp_path: Path) -> None:
    preview = await TOOL.preview(WriteFileInput(path="new.txt", content="hi\n"), ctx)
    assert preview == {"kind": "diff", "path": "new.txt", "diff": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n"}
    assert not (tmp_path / "new.txt").exists()


async def test_directory_is_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await call_tool(TOOL, ctx, path="d", content="x")
    assert out.is_error and "directory" in out.content


async def test_parent_that_is_a_file_is_a_clear_error(ctx: ToolContext, call_tool: CallTool,
                                                      tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    out = await call_tool(TOOL, ctx, path="plain/child.txt", content="x")
    assert out.is_error and "plain/child.txt" in out.content


async def test_symlinks_are_followed_and_reported_resolved(make_ctx: MakeCtx, call_tool: CallTool,
                                                          tmp_path: Path) -> None:
    root = tmp_path / "ws"
    ctx = make_ctx(root)
    (root / "real.txt").write_text("old\n")
    (root / "alias.txt").symlink_to(root / "real.txt")
    outside = tmp_path / "outside.txt"
    outside.write_text("out\n")
    (root / "escape.txt").symlink_to(outside)

    assert TOOL.permission_target(WriteFileInput(path="alias.txt", content=""), ctx) == \
        FileAccess(paths=(str(root / "real.txt"),), write=True)
    assert TOOL.permission_target(WriteFileInput(path="escape.txt", content=""), ctx).paths == (str(outside),)
    assert TOOL.permission_target(WriteFileInput(path="../x/y.txt", content=""), ctx).paths == \
        (str(tmp_path / "x" / "y.txt"),)

    await call_tool(READ, ctx, path="alias.txt")
    out = await call_tool(TOOL, ctx, path="alias.txt", content="new\n")
    assert out.content == "Overwrote real.txt (1 line)."
    assert (root / "alias.txt").is_symlink() and (root / "real.txt").read_text() == "new\n"


async def test_lone_surrogate_content_is_refused(ctx: ToolContext, call_tool: CallTool, tmp_path: Path) -> None:
    out = await call_tool(TOOL, ctx, path="s.txt", content="bad \ud800 char")
    assert out.is_error and "cannot represent" in out.content
    assert not (tmp_path / "s.txt").exists()
