"""`loom acp` with an editor that offers ``fs`` and ``terminal``: the model reads the
editor's unsaved buffer, its edit lands through the editor, and its command runs in an
editor terminal shown inside the tool call — the real agent process, the SDK's client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp.schema import ClientCapabilities, FileSystemCapabilities, TextContentBlock

from tests.doubles.acp_client import RecordingClient, loom_acp
from tests.doubles.acp_editor import EditorDouble
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom_env


class EditingClient(RecordingClient):
    """A recording client whose files and terminals are an :class:`EditorDouble`'s."""

    def __init__(self, editor: EditorDouble, answers: list[str]) -> None:
        super().__init__(answers=answers)
        self.editor = editor

    async def read_text_file(self, **kwargs: Any) -> Any:
        return await self.editor.read_text_file(**kwargs)

    async def write_text_file(self, **kwargs: Any) -> Any:
        return await self.editor.write_text_file(**kwargs)

    async def create_terminal(self, **kwargs: Any) -> Any:
        return await self.editor.create_terminal(**kwargs)

    async def terminal_output(self, **kwargs: Any) -> Any:
        return await self.editor.terminal_output(**kwargs)

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        return await self.editor.wait_for_terminal_exit(**kwargs)

    async def kill_terminal(self, **kwargs: Any) -> Any:
        return await self.editor.kill_terminal(**kwargs)

    async def release_terminal(self, **kwargs: Any) -> Any:
        return await self.editor.release_terminal(**kwargs)


def test_files_and_commands_go_through_the_editor_that_offers_them(tmp_path: Path,
                                                                   fake_llm: FakeLLMServer) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    notes = workspace / "notes.txt"
    notes.write_text("colour: red\n")
    fake_llm.enqueue(
        Reply.tool("read_file", {"path": "notes.txt"}),
        Reply.tool("edit_file", {"path": "notes.txt", "old_string": "green", "new_string": "blue"}),
        Reply.tool("bash", {"command": "echo from-the-terminal > out.txt && cat out.txt"}),
        Reply.text("Done."),
    )

    async def conversation() -> tuple[EditingClient, str]:
        editor = EditorDouble()
        editor.buffers[str(notes)] = "colour: green\n"  # unsaved in the editor; the disk says red
        client = EditingClient(editor, answers=["allow_once"] * 3)
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                                          terminal=True)
        async with loom_acp(client, workspace, loom_env(tmp_path, fake_llm)) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[TextContentBlock(type="text", text="make it blue")])
            await editor.close()
        return client, done.stop_reason

    client, stop = asyncio.run(conversation())
    assert stop == "end_turn"
    editor = client.editor
    # The model read the buffer, not the disk, and its edit went through the editor.
    first_result = str(fake_llm.requests[1].body["messages"][-1]["content"])
    assert "colour: green" in first_result and "red" not in first_result
    assert editor.writes == [(str(notes), "colour: blue\n")] and notes.read_text() == "colour: blue\n"
    # The command ran in an editor terminal, in the workspace, and its output reached the model.
    [terminal] = editor.terminals
    assert terminal.cwd == str(workspace) and (workspace / "out.txt").read_text() == "from-the-terminal\n"
    assert "from-the-terminal" in str(fake_llm.requests[3].body["messages"][-1]["content"])
    # The editor was shown the terminal inside the bash call, and it was released.
    shown = [item for update in client.of_kind("tool_call_update") for item in (update.content or [])
             if item.type == "terminal"]
    assert shown and {item.terminal_id for item in shown} == {"term-1"} and editor.released == ["term-1"]
