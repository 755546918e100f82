"""Attacks on the file tools (issue 9, items 7, 8, 10, 15 and 18).

Each test is a repro from the issue: glob listing outside folders through its pattern,
a symlink swapped between the permission check and the write, apply_patch deleting a
link's target or overwriting an unread file, NUL bytes and other impossible paths,
and inputs large enough to exhaust memory.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import builtin_tools._files.limits as limits
from builtin_tools.apply_patch import ApplyPatchTool
from builtin_tools.edit_file import EditFileTool
from builtin_tools.glob import GlobTool
from builtin_tools.grep import GrepTool
from builtin_tools.ls import LsTool
from builtin_tools.multi_edit import MultiEditTool
from builtin_tools.read_file import ReadFileTool
from builtin_tools.write_file import WriteFileTool
from loom_engine.bus import EventBus
from loom_engine.execution import CancelToken
from loom_engine.messages import ToolUsePart
from loom_engine.metrics import RunMetrics
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import Tool, ToolContext, ToolError, ToolOutput, ToolSessionState
from loom_engine.tools.pipeline import ToolPipeline
from loom_engine.tools.registry import ToolRegistry
from loom_engine.workspace import Workspace


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and a folder beside it that the model must not reach unasked."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    return root, outside


def new_ctx(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace.at(root), cancel=CancelToken(), state=ToolSessionState())


async def through_permissions(tool: Tool, manager: PermissionManager, ctx: ToolContext,
                              **arguments: Any) -> ToolOutput | None:
    """What the pipeline does for one call: target, check, and run with the same context.

    ``None`` when the check did not allow the call (it would ask or deny).
    """
    args = tool.input_model.model_validate(arguments)
    target = tool.permission_target(args, ctx)
    decision = manager.check(tool.name, target, is_read_only=tool.is_read_only, cwd=ctx.cwd)
    if decision.behavior != "allow":
        return None
    return await tool.run(args, ctx)


def decision_for(tool: Tool, root: Path, mode: str = "default", **arguments: Any) -> str:
    ctx = new_ctx(root)
    args = tool.input_model.model_validate(arguments)
    manager = PermissionManager(Workspace.at(root), mode=mode)  # type: ignore[arg-type]
    return manager.check(tool.name, tool.permission_target(args, ctx), is_read_only=tool.is_read_only,
                         cwd=ctx.cwd).behavior


# ----------------------------------------------------------------------------- item 7: glob

@pytest.mark.parametrize("use_rg", [True, False])
@pytest.mark.parametrize("pattern, path", [
    ("../outside/*", "."),
    ("../outside/**", "."),
    ("../../outside/**", "sub"),
    ("../../../outside/*.txt", "sub/deeper"),
    ("{outside}/*", "."),  # the absolute form is filled in below
    ("sub/../../outside/*", "."),
])
def test_glob_pattern_reaching_outside_is_asked_about_not_listed(layout, pattern, path, use_rg):
    root, outside = layout
    (root / "sub" / "deeper").mkdir(parents=True)
    pattern = pattern.replace("{outside}", str(outside))
    tool = GlobTool(use_rg=use_rg)
    # Reading outside the workspace asks in default mode; the pattern's folder is checked.
    assert decision_for(tool, root, pattern=pattern, path=path) == "ask"
    target = tool.permission_target(tool.input_model.model_validate({"pattern": pattern, "path": path}),
                                    new_ctx(root))
    assert isinstance(target, FileAccess) and str(outside) in target.paths


def test_glob_pattern_inside_the_workspace_needs_no_approval(layout):
    root, _ = layout
    (root / "src").mkdir()
    for pattern in ("**/*.py", "src/*.py", "./src/../src/*.py", str(root / "src") + "/*.py"):
        assert decision_for(GlobTool(), root, pattern=pattern, path=".") == "allow", pattern


def test_glob_through_a_symlinked_folder_checks_where_it_leads(layout):
    root, outside = layout
    (root / "alias").symlink_to(outside)
    assert decision_for(GlobTool(), root, pattern="alias/../outside/*", path=".") == "ask"


# ----------------------------------------------------------------------------- item 8: races

class Swapper:
    """Flips ``link`` between a folder inside and one outside, as fast as it can.

    How many flips land during a run of calls depends on the scheduler (a loaded machine
    gives this thread few turns): ``race`` keeps calling until enough flips have been seen.
    """

    def __init__(self, link: Path, inside: Path, outside: Path) -> None:
        self.link, self.inside, self.outside = link, inside, outside
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.flips = 0

    def _run(self) -> None:
        tmp = self.link.with_name(self.link.name + ".tmp")
        while not self.stop.is_set():
            for where in (self.outside, self.inside):
                try:
                    os.symlink(where, tmp)
                    os.replace(tmp, self.link)  # atomic: the name always exists
                    self.flips += 1
                except OSError:
                    pass

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


FLIPS_FOR_A_RACE = 40


async def race(swapper: Swapper, call: Callable[[int], Awaitable[None]], at_least: int) -> int:
    """Make calls ``0, 1, ...`` until ``at_least`` were made and the link has flipped
    ``FLIPS_FOR_A_RACE`` times while they ran; the number of calls made."""
    made, start = 0, swapper.flips
    while made < at_least or swapper.flips - start < FLIPS_FOR_A_RACE:
        assert made < 100 * at_least, f"the link flipped {swapper.flips - start} times in {made} calls"
        await call(made)
        made += 1
    return made


def _landed_outside(outside: Path) -> list[str]:
    return sorted(p.name for p in outside.iterdir() if p.name != "secret.txt")


@pytest.mark.parametrize("mode", ["accept-edits", "bypass"])
@pytest.mark.parametrize("tool_name", ["write_file", "edit_file", "apply_patch"])
def test_symlink_swapped_between_check_and_write_never_writes_outside(layout, mode, tool_name):
    root, outside = layout
    inside = root / "inside"
    inside.mkdir()
    link = root / "link"
    link.symlink_to(inside)
    manager = PermissionManager(Workspace.at(root), mode=mode)
    calls = 80

    async def one(i: int) -> None:
        ctx = new_ctx(root)
        name = f"f{i}.txt"
        if tool_name == "write_file":
            await through_permissions(WriteFileTool(), manager, ctx, path=f"link/{name}", content="x\n")
        elif tool_name == "apply_patch":
            await through_permissions(ApplyPatchTool(), manager, ctx,
                                      patch=f"*** Begin Patch\n*** Add File: link/{name}\n+x\n*** End Patch")
        else:
            await through_permissions(EditFileTool(), manager, ctx, path=f"link/{name}", old_string="",
                                      new_string="x\n")

    with Swapper(link, inside, outside) as swapper:
        asyncio.run(race(swapper, one, at_least=calls))
    assert _landed_outside(outside) == []
    assert (outside / "secret.txt").read_text() == "secret\n"


@pytest.mark.parametrize("mode", ["accept-edits", "bypass"])
def test_race_through_the_real_pipeline_never_writes_outside(layout, mode):
    """The engine's own pipeline (check, then run, one context per call) under the swapper."""
    root, outside = layout
    inside = root / "inside"
    inside.mkdir()
    link = root / "link"
    link.symlink_to(inside)
    workspace = Workspace.at(root)
    state = ToolSessionState()

    def make_context(call_id: str) -> ToolContext:
        return ToolContext(workspace=workspace, cancel=CancelToken(), state=state, call_id=call_id)

    pipeline = ToolPipeline(registry=ToolRegistry([WriteFileTool(), ApplyPatchTool()]), bus=EventBus(),
                            metrics=RunMetrics(), make_context=make_context, emit=lambda event: None,
                            stamp=dict, permissions=PermissionManager(workspace, mode=mode),  # type: ignore[arg-type]
                            interactive=False)

    results: list[str] = []

    async def two_calls(i: int) -> None:
        for call in (ToolUsePart(f"w{i}", "write_file", {"path": f"link/w{i}.txt", "content": "x\n"}),
                     ToolUsePart(f"p{i}", "apply_patch",
                                 {"patch": f"*** Begin Patch\n*** Add File: link/p{i}.txt\n+x\n*** End Patch"})):
            run = await pipeline.run(call)
            results.append(str(run.result.content))

    with Swapper(link, inside, outside) as swapper:
        asyncio.run(race(swapper, two_calls, at_least=40))
    assert _landed_outside(outside) == []
    written = len(list(inside.iterdir()))
    assert written > 0  # some calls saw the inside folder and wrote there
    assert written + sum("denied" in r or "symlink" in r for r in results) == len(results)


def test_folder_replaced_by_a_symlink_after_the_check_is_refused(layout):
    """The check saw a real folder; by the write it is a symlink to outside: nothing is written."""
    root, outside = layout
    folder = root / "d"
    folder.mkdir()
    ctx = new_ctx(root)
    tool = WriteFileTool()
    args = tool.input_model.model_validate({"path": "d/new.txt", "content": "x\n"})
    manager = PermissionManager(Workspace.at(root), mode="accept-edits")
    assert manager.check(tool.name, tool.permission_target(args, ctx), is_read_only=False).behavior == "allow"
    folder.rmdir()
    folder.symlink_to(outside)
    result = asyncio.run(tool.run(args, ctx))
    assert result.is_error and "symlink" in result.content
    assert _landed_outside(outside) == []


def test_link_retargeted_after_the_check_writes_the_checked_place(layout):
    root, outside = layout
    (root / "inside").mkdir()
    (root / "link").symlink_to(root / "inside")
    ctx = new_ctx(root)
    tool = WriteFileTool()
    args = tool.input_model.model_validate({"path": "link/new.txt", "content": "x\n"})
    assert tool.permission_target(args, ctx) == FileAccess((str(root / "inside" / "new.txt"),), True)
    (root / "link").unlink()
    (root / "link").symlink_to(outside)
    result = asyncio.run(tool.run(args, ctx))
    assert not result.is_error, result.content
    assert (root / "inside" / "new.txt").read_text() == "x\n"
    assert _landed_outside(outside) == []


def test_read_through_a_folder_swapped_for_a_symlink_is_refused(layout):
    root, outside = layout
    folder = root / "d"
    folder.mkdir()
    (folder / "secret.txt").write_text("inside\n")
    ctx = new_ctx(root)
    tool = ReadFileTool()
    args = tool.input_model.model_validate({"path": "d/secret.txt"})
    tool.permission_target(args, ctx)
    (folder / "secret.txt").unlink()
    folder.rmdir()
    folder.symlink_to(outside)
    result = asyncio.run(tool.run(args, ctx))
    assert result.is_error and "secret" not in result.content.replace("secret.txt", "")


def test_read_races_never_show_outside_content(layout):
    root, outside = layout
    inside = root / "inside"
    inside.mkdir()
    (inside / "secret.txt").write_text("harmless\n")
    link = root / "link"
    link.symlink_to(inside)
    manager = PermissionManager(Workspace.at(root), mode="default")
    leaked = 0

    async def one(_: int) -> None:
        nonlocal leaked
        result = await through_permissions(ReadFileTool(), manager, new_ctx(root), path="link/secret.txt")
        if result is not None and "secret\n" in result.content + "\n" and "harmless" not in result.content:
            leaked += 1

    with Swapper(link, inside, outside) as swapper:
        asyncio.run(race(swapper, one, at_least=80))
    assert leaked == 0


@pytest.mark.parametrize("use_rg", [True, False])
@pytest.mark.parametrize("tool_class", [GrepTool, GlobTool])
def test_search_in_a_folder_swapped_for_a_symlink_after_the_check_finds_nothing_outside(layout, tool_class,
                                                                                        use_rg):
    root, outside = layout
    folder = root / "d"
    folder.mkdir()
    (folder / "harmless.txt").write_text("harmless\n")
    tool = tool_class(use_rg=use_rg)
    ctx = new_ctx(root)
    arguments = {"pattern": "secret", "path": "d"} if tool_class is GrepTool else {"pattern": "*.txt", "path": "d"}
    args = tool.input_model.model_validate(arguments)
    manager = PermissionManager(Workspace.at(root))
    assert manager.check(tool.name, tool.permission_target(args, ctx), is_read_only=True).behavior == "allow"
    folder.rename(root / "d.old")
    folder.symlink_to(outside)
    result = asyncio.run(tool.run(args, ctx))
    assert "secret" not in result.content.replace("'secret'", ""), result.content
    assert result.is_error and "symlink" in result.content


# ----------------------------------------------------------------------------- item 10: apply_patch

def test_delete_file_on_a_symlink_removes_the_link_not_its_target(layout):
    root, _ = layout
    (root / "real.txt").write_text("keep me\n")
    (root / "link.txt").symlink_to(root / "real.txt")
    ctx = new_ctx(root)
    result = asyncio.run(ApplyPatchTool().run(ApplyPatchTool.input_model.model_validate(
        {"patch": "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch"}), ctx))
    assert not result.is_error, result.content
    assert not (root / "link.txt").is_symlink() and not (root / "link.txt").exists()
    assert (root / "real.txt").read_text() == "keep me\n"


def test_delete_file_on_a_link_to_outside_removes_only_the_link(layout):
    root, outside = layout
    (root / "link.txt").symlink_to(outside / "secret.txt")
    ctx = new_ctx(root)
    tool = ApplyPatchTool()
    args = tool.input_model.model_validate({"patch": "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch"})
    result = asyncio.run(tool.run(args, ctx))
    assert not result.is_error, result.content
    assert not os.path.lexists(root / "link.txt")
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_add_file_over_an_unread_file_is_refused_like_write_file(layout):
    root, _ = layout
    (root / "notes.txt").write_text("precious\n")
    ctx = new_ctx(root)
    patch = "*** Begin Patch\n*** Add File: notes.txt\n+new\n*** End Patch"
    result = asyncio.run(ApplyPatchTool().run(ApplyPatchTool.input_model.model_validate({"patch": patch}), ctx))
    assert result.is_error
    assert "notes.txt already exists and has not been read in this session" in result.content
    assert (root / "notes.txt").read_text() == "precious\n"
    written = asyncio.run(WriteFileTool().run(WriteFileTool.input_model.model_validate(
        {"path": "notes.txt", "content": "new\n"}), ctx))
    assert written.is_error and "already exists and has not been read in this session" in written.content


def test_add_file_over_a_read_file_is_allowed(layout):
    root, _ = layout
    (root / "notes.txt").write_text("old\n")
    ctx = new_ctx(root)
    asyncio.run(ReadFileTool().run(ReadFileTool.input_model.model_validate({"path": "notes.txt"}), ctx))
    patch = "*** Begin Patch\n*** Add File: notes.txt\n+new\n*** End Patch"
    result = asyncio.run(ApplyPatchTool().run(ApplyPatchTool.input_model.model_validate({"patch": patch}), ctx))
    assert not result.is_error, result.content
    assert (root / "notes.txt").read_text() == "new\n"


# ----------------------------------------------------------------------------- item 15: impossible paths

BAD_PATHS = [
    ("a\x00b.txt", "NUL byte"),
    ("\x00", "NUL byte"),
    ("ok/\ud800.txt", "lone surrogate"),
    ("x" * 100_000, "characters"),  # "... characters long" (a path), "... characters, over" (a pattern)
    ("/" + "a/" * 5000 + "f", "characters"),
    ("d/" + "a" * 300, "bytes long"),  # one name over NAME_MAX: ENAMETOOLONG escaped glob, grep and ls
]


def _calls_for(path: str, *, as_pattern: bool = True) -> list[tuple[Tool, dict[str, Any]]]:
    calls: list[tuple[Tool, dict[str, Any]]] = [
        (ReadFileTool(), {"path": path}),
        (WriteFileTool(), {"path": path, "content": "x"}),
        (EditFileTool(), {"path": path, "old_string": "a", "new_string": "b"}),
        (MultiEditTool(), {"path": path, "edits": [{"old_string": "a", "new_string": "b"}]}),
        (ApplyPatchTool(), {"patch": f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch"}),
        (ApplyPatchTool(), {"patch": f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch"}),
        (ApplyPatchTool(), {"patch": f"*** Begin Patch\n*** Update File: a.txt\n*** Move to: {path}\n@@\n-a\n+b\n"
                                     "*** End Patch"}),
        (GlobTool(), {"pattern": "*", "path": path}),
        (GrepTool(), {"pattern": "a", "path": path}),
        (LsTool(), {"path": path}),
    ]
    if as_pattern:
        calls.append((GlobTool(), {"pattern": path}))
    return calls


@pytest.mark.parametrize("path, reason", BAD_PATHS, ids=["nul", "only-nul", "surrogate", "huge", "deep", "long-name"])
def test_impossible_paths_are_one_line_tool_errors(layout, path, reason):
    root, _ = layout
    (root / "a.txt").write_text("a\n")
    # A long name is a fine glob pattern (`{a,b,...}` may be long): it just matches nothing.
    for tool, arguments in _calls_for(path, as_pattern=reason != "bytes long"):
        ctx = new_ctx(root)
        args: BaseModel = tool.input_model.model_validate(arguments)
        try:
            tool.permission_target(args, ctx)
        except ToolError as error:
            assert reason in str(error) and "\n" not in str(error), (tool.name, str(error))
        result = asyncio.run(tool.run(args, ctx))
        assert result.is_error, (tool.name, result.content)
        assert reason in result.content, (tool.name, result.content[:300])
        assert len(result.content) < 400, (tool.name, len(result.content))
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("pattern, reason", [("a\x00b", "NUL byte"), ("a\ud800", "lone surrogate")])
def test_an_impossible_grep_pattern_is_an_error_result(layout, pattern, reason):
    root, _ = layout
    (root / "a.txt").write_text("a\n")
    for tool in (GrepTool(), GrepTool(use_rg=False)):
        result = asyncio.run(tool.run(tool.input_model.model_validate({"pattern": pattern}), new_ctx(root)))
        assert result.is_error and reason in result.content


# ----------------------------------------------------------------------------- item 18: memory

def test_edit_refuses_a_file_over_the_edit_limit_and_says_what_to_do(layout, monkeypatch):
    root, _ = layout
    monkeypatch.setattr(limits, "EDIT_LIMIT_BYTES", 1024 * 1024)
    big = root / "big.txt"
    big.write_bytes(b"line\n" * 400_000)  # 2 MB
    ctx = new_ctx(root)
    asyncio.run(ReadFileTool().run(ReadFileTool.input_model.model_validate({"path": "big.txt"}), ctx))
    for tool, arguments in [
        (EditFileTool(), {"path": "big.txt", "old_string": "line", "new_string": "x", "replace_all": True}),
        (MultiEditTool(), {"path": "big.txt", "edits": [{"old_string": "line", "new_string": "x",
                                                        "replace_all": True}]}),
        (WriteFileTool(), {"path": "big.txt", "content": "x"}),
        (ApplyPatchTool(), {"patch": "*** Begin Patch\n*** Update File: big.txt\n@@\n-line\n+x\n*** End Patch"}),
    ]:
        result = asyncio.run(tool.run(tool.input_model.model_validate(arguments), ctx))
        assert result.is_error, tool.name
        assert "big.txt is 1.9 MB, over the 1 MB edit limit" in result.content, (tool.name, result.content)
        assert "bash" in result.content
    assert big.read_bytes() == b"line\n" * 400_000


def test_grep_without_rg_skips_files_too_big_to_hold_and_says_so(layout, monkeypatch):
    root, _ = layout
    monkeypatch.setattr(limits, "PYTHON_GREP_MAX_BYTES", 1024 * 1024)
    (root / "big.log").write_bytes(b"needle\n" * 300_000)
    (root / "small.txt").write_text("needle\n")
    tool = GrepTool(use_rg=False)
    result = asyncio.run(tool.run(tool.input_model.model_validate({"pattern": "needle"}), new_ctx(root)))
    assert result.content.startswith("Found 1 file\nsmall.txt")
    assert "1 file over 1 MB not searched" in result.content


def test_read_file_of_a_huge_line_returns_its_start_and_says_it_was_cut(layout):
    root, _ = layout
    (root / "one.txt").write_bytes(b"a" * (3 * 1024 * 1024))
    result = asyncio.run(ReadFileTool().run(ReadFileTool.input_model.model_validate({"path": "one.txt"}),
                                            new_ctx(root)))
    assert not result.is_error
    assert result.content.startswith("     1\t" + "a" * 2000 + "... [line truncated: 3,143,728 more characters]")


@pytest.mark.parametrize("which", ["grep", "glob", "grep-glob"])
def test_patterns_over_the_cap_are_refused(layout, which):
    root, _ = layout
    huge = "a" * (limits.MAX_PATTERN_CHARS + 1)
    if which == "grep":
        tool: Tool = GrepTool()
        arguments = {"pattern": huge}
    elif which == "glob":
        tool, arguments = GlobTool(), {"pattern": huge}
    else:
        tool, arguments = GrepTool(), {"pattern": "a", "glob": huge}
    result = asyncio.run(tool.run(tool.input_model.model_validate(arguments), new_ctx(root)))
    assert result.is_error
    assert f"over the {limits.MAX_PATTERN_CHARS:,}-character limit" in result.content
    assert len(result.content) < 400


def test_reading_a_40_mb_file_without_newlines_stays_small(tmp_path):
    big = tmp_path / "flat.txt"
    with big.open("wb") as handle:
        for _ in range(40):
            handle.write(b"b" * (1024 * 1024))
    code = (
        "import asyncio\n"
        "from pathlib import Path\n"
        "from builtin_tools.read_file import ReadFileTool\n"
        "from loom_engine.execution import CancelToken\n"
        "from loom_engine.tools.base import ToolContext, ToolSessionState\n"
        "from loom_engine.workspace import Workspace\n"
        f"ctx = ToolContext(workspace=Workspace.at({str(tmp_path)!r}), cancel=CancelToken(),\n"
        "                  state=ToolSessionState())\n"
        "out = asyncio.run(ReadFileTool().run(ReadFileTool.input_model.model_validate({'path': 'flat.txt'}), ctx))\n"
        "assert 'line truncated' in out.content, out.content[:200]\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", "import resource, subprocess, sys\n"
         f"subprocess.run([sys.executable, '-c', {code!r}], check=True)\n"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"],
        check=True, capture_output=True, text=True, cwd=Path(__file__).parents[2])
    peak_mb = int(result.stdout.strip()) / 1024
    # The interpreter and imports take ~40 MB; the file itself (40 MB) must not be held.
    # Measured: 119 MB before the streaming reader, 41 MB after.
    assert peak_mb < 80, peak_mb
