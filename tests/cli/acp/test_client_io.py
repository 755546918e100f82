"""Loom's tools over an editor's files and terminals (ACP ``fs/*`` and ``terminal/*``).

The real tools run with the ACP backends in their context; the backends talk, through
the SDK's own agent-side connection, to the SDK's client side serving an editor double
(tests/doubles/acp_editor.py): buffers over the disk, terminals that really run. What
is checked is what the model reads and where things land: on the editor's side, and
not on disk; and that the sandbox confines a command the editor runs.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities

from builtin_tools.bash import BashInput, BashTool
from builtin_tools.edit_file import EditFileInput, EditFileTool
from builtin_tools.read_file import ReadFileInput, ReadFileTool
from builtin_tools.write_file import WriteFileInput, WriteFileTool
from loom_cli.acp.client_files import ClientFileAccess
from loom_cli.acp.client_io import client_io
from loom_cli.acp.client_terminal import ClientTerminalRunner
from loom_engine.execution import CancelToken
from loom_engine.sandbox import Sandbox, SandboxConfig
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.workspace import Workspace
from tests.doubles.acp_editor import SESSION, EditorDouble, editor_pair
from tests.doubles.sandbox import real_path, real_sandbox


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = real_path(tmp_path) / "ws"
    folder.mkdir()
    return folder


def context(root: Path, connection: object, *, sandbox: Sandbox | None = None,
            started: list[tuple[str, str]] | None = None) -> ToolContext:
    async def show(call_id: str, terminal_id: str) -> None:
        if started is not None:
            started.append((call_id, terminal_id))

    return ToolContext(workspace=Workspace.at(root), cancel=CancelToken(), state=ToolSessionState(),
                       call_id="call-1", sandbox=sandbox,
                       files=ClientFileAccess(connection, SESSION),  # type: ignore[arg-type]
                       commands=ClientTerminalRunner(connection, SESSION, on_terminal=show))  # type: ignore[arg-type]


async def test_read_file_reads_the_editors_unsaved_buffer(root: Path) -> None:
    source = root / "app.py"
    source.write_text("print('saved')\n")
    async with editor_pair() as (connection, editor):
        editor.buffers[str(source)] = "print('unsaved')\nprint('second')\n"
        result = await ReadFileTool().run(ReadFileInput(path="app.py"), context(root, connection))
    assert not result.is_error
    assert "print('unsaved')" in result.content and "     2\tprint('second')" in result.content
    assert "saved')" not in result.content.replace("unsaved", "")
    assert editor.reads == [str(source)]


async def test_an_edit_is_made_to_the_buffer_and_lands_through_the_editor(root: Path) -> None:
    source = root / "app.py"
    source.write_text("x = 1\n")
    async with editor_pair() as (connection, editor):
        editor.buffers[str(source)] = "x = 1\ny = 2\n"  # the user typed a line, not saved
        ctx = context(root, connection)
        await ReadFileTool().run(ReadFileInput(path="app.py"), ctx)
        result = await EditFileTool().run(EditFileInput(path="app.py", old_string="y = 2", new_string="y = 3"), ctx)
        created = await WriteFileTool().run(WriteFileInput(path="new/notes.md", content="# notes\n"), ctx)
    assert not result.is_error, result.content
    assert not created.is_error, created.content
    assert editor.writes == [(str(source), "x = 1\ny = 3\n"), (str(root / "new" / "notes.md"), "# notes\n")]
    assert source.read_text() == "x = 1\ny = 3\n"  # as the editor saved it


async def test_an_editor_error_reads_as_a_one_line_tool_error(root: Path) -> None:
    source = root / "app.py"
    source.write_text("x = 1\n")
    async with editor_pair() as (connection, editor):
        ctx = context(root, connection)
        await ReadFileTool().run(ReadFileInput(path="app.py"), ctx)
        editor.failing[str(source)] = "the buffer is read-only"
        written = await EditFileTool().run(EditFileInput(path="app.py", old_string="1", new_string="2"), ctx)
        read = await ReadFileTool().run(ReadFileInput(path="app.py"), ctx)
    for result in (written, read):
        assert result.is_error
        assert "\n" not in result.content
        assert "the buffer is read-only" in result.content
    assert read.content.startswith("Cannot read app.py: the editor could not read")
    assert source.read_text() == "x = 1\n"


async def test_bash_runs_in_the_editors_terminal_which_the_tool_call_shows(root: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-the-editor")
    (root / "sub").mkdir()
    started: list[tuple[str, str]] = []
    async with editor_pair() as (connection, editor):
        ctx = context(root, connection, started=started)
        result = await BashTool().run(BashInput(command="cd sub && echo hello from $PWD; exit 3"), ctx)
    assert result.content.splitlines()[0] == f"hello from {root / 'sub'}"
    assert "Exit code: 3" in result.content and result.is_error
    assert "Working directory is now sub." in result.content  # the cwd trap works through the editor
    assert [request.command for request in editor.terminals] == ["bash"]
    # The editor gets what Loom adds to the command's environment, not Loom's own keys.
    asked = editor.terminals[0].env
    assert "LOOM_BASH_CALL" in asked and asked["PAGER"] == "cat" and asked["PWD"] == str(root)
    assert "ANTHROPIC_API_KEY" not in asked
    assert started == [("call-1", "term-1")]
    assert result.display is not None and result.display["terminal_id"] == "term-1"
    assert editor.released == ["term-1"] and editor.killed == []


async def test_a_sandboxed_command_in_the_editors_terminal_is_still_confined(root: Path, tmp_path: Path) -> None:
    outside = real_path(tmp_path) / "outside"
    outside.mkdir()
    (root / "src").mkdir()
    sandbox = real_sandbox(Workspace.at(root), "landlock")  # needs no inherited descriptor
    try:
        async with editor_pair() as (connection, editor):
            ctx = context(root, connection, sandbox=sandbox)
            inside = await BashTool().run(BashInput(command="echo kept > src/inside.txt"), ctx)
            escape = await BashTool().run(BashInput(command=f"echo leaked > {outside}/x.txt"), ctx)
    finally:
        sandbox.close()
    assert not inside.is_error, inside.content
    assert (root / "src" / "inside.txt").read_text() == "kept\n"
    assert escape.is_error and not (outside / "x.txt").exists()
    # What the editor ran is the confined command line: Loom's Landlock launcher, with
    # the bash call after it.
    asked = editor.terminals[1]
    assert any(arg.endswith("sandbox/launch.py") for arg in asked.args) and "bash" in asked.args
    assert asked.args[asked.args.index("bash") + 1] == "-c"


async def test_bubblewrap_confines_a_command_the_editor_runs(root: Path, tmp_path: Path) -> None:
    outside = real_path(tmp_path) / "outside"
    outside.mkdir()
    (root / "src").mkdir()
    sandbox = real_sandbox(Workspace.at(root), "bubblewrap")  # its seccomp program is an inherited fd
    try:
        async with editor_pair() as (connection, editor):
            ctx = context(root, connection, sandbox=sandbox)
            works = await BashTool().run(BashInput(command="echo confined > src/kept.txt && cat src/kept.txt"), ctx)
            escape = await BashTool().run(BashInput(command=f"echo leaked > {outside}/x.txt"), ctx)
            # The socket filter holds: no Unix socket can be made inside.
            socket = await BashTool().run(BashInput(command=(
                f"{sys.executable} -c 'import socket; socket.socket(socket.AF_UNIX)' && echo made")), ctx)
    finally:
        sandbox.close()
    assert works.content.startswith("confined\n"), works.content  # it runs, inside the walls
    assert escape.is_error and not (outside / "x.txt").exists()
    assert socket.is_error and "made" not in socket.content
    asked = editor.terminals[0]
    assert any(arg.endswith("sandbox/descriptor_launch.py") for arg in asked.args)
    assert "--seccomp" in asked.args and any(arg.endswith("bwrap") for arg in asked.args)


async def test_a_command_behind_the_allow_list_proxy_is_not_given_to_the_editor(root: Path) -> None:
    config = SandboxConfig(network="allowlist", allowed_domains=("example.com",))
    sandbox = real_sandbox(Workspace.at(root), "bubblewrap", config)  # the relay's channel cannot be passed
    try:
        async with editor_pair() as (connection, editor):
            done = await BashTool().run(BashInput(command="echo ran"), context(root, connection, sandbox=sandbox))
    finally:
        sandbox.close()
    assert done.content.startswith("ran"), done.content
    assert editor.terminals == []  # Loom ran it itself, confined


async def test_a_cancel_kills_and_releases_the_editors_terminal(root: Path) -> None:
    async with editor_pair() as (connection, editor):
        ctx = context(root, connection)
        run = asyncio.ensure_future(BashTool().run(BashInput(command="echo started; exec sleep 300"), ctx))
        await editor.terminal_started.wait()
        ctx.cancel.cancel()
        result = await run
    assert "Aborted by the user" in result.content and result.is_error
    assert editor.killed == ["term-1"] and editor.released == ["term-1"]


def test_the_client_backends_follow_its_capabilities() -> None:
    connection = EditorDouble()
    both = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
    read_only = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True), terminal=False)
    chosen = client_io(both, connection, SESSION)  # type: ignore[arg-type]
    assert isinstance(chosen.files, ClientFileAccess) and isinstance(chosen.commands, ClientTerminalRunner)
    # Reading the buffer but writing the disk would let one overwrite the other.
    assert client_io(read_only, connection, SESSION) == client_io(None, connection, SESSION)  # type: ignore[arg-type]
    assert client_io(None, connection, SESSION).files is None  # type: ignore[arg-type]
    assert client_io(None, connection, SESSION).commands is None  # type: ignore[arg-type]


async def test_a_timeout_or_a_cancelled_call_kills_and_releases_the_terminal(root: Path) -> None:
    async with editor_pair() as (connection, editor):
        ctx = context(root, connection)
        timed_out = await BashTool().run(BashInput(command="exec sleep 300", timeout=0.5), ctx)
        editor.terminal_started.clear()
        call = asyncio.ensure_future(BashTool().run(BashInput(command="exec sleep 300"), ctx))
        await editor.terminal_started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    assert "Timed out after 0.5 s" in timed_out.content
    assert editor.killed == ["term-1", "term-2"] and editor.released == ["term-1", "term-2"]
