"""`loom acp` driven by the ACP SDK's own client side, against the fake LLM server.

One agent process serves the whole first conversation (streamed text, an edit allowed,
one rejected, a cancel mid-stream, a mode switch); a second one lists and loads it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import ClientCapabilities, McpServerStdio, TextContentBlock

from loom_engine.messages import is_prompt
from loom_engine.sessions.store import SessionStore
from tests.doubles.acp_client import CANCEL, RecordingClient, Transcript, loom_acp
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom_env
from tests.doubles.mcp_servers import MISBEHAVING

# The lead's closing note shows what the client saw in this run.
TRANSCRIPT = Path("/tmp/acp-transcript.jsonl")
REFUSED = "Refused by the user"
STREAMED = "Hello from Loom,\nstreamed in pieces,\nline by line."
KEY = "sk-ant-api03-" + "k" * 90  # the key Loom holds: never sent to the editor


def _text(text: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=text)]


def _tool_results(request_messages: list[dict]) -> list[str]:
    return [str(block.get("content")) for message in request_messages if isinstance(message.get("content"), list)
            for block in message["content"] if block.get("type") == "tool_result"]


def test_an_editor_session_from_first_prompt_to_a_loaded_continuation(tmp_path: Path,
                                                                      fake_llm: FakeLLMServer) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("colour: red\n")
    # The project would loosen the mode; it is not trusted, so edits still ask, and the
    # first reply says what was left out.
    (workspace / ".loom").mkdir()
    (workspace / ".loom" / "settings.toml").write_text('permission_mode = "accept-edits"\n')
    (workspace / ".loom" / "commands").mkdir()
    (workspace / ".loom" / "commands" / "greet.md").write_text(
        "---\ndescription: Greet someone warmly\n---\nSay a warm hello to $ARGUMENTS.\n")
    env = loom_env(tmp_path, fake_llm, api_key=KEY)
    fake_llm.enqueue(
        Reply.text(STREAMED, chunk_size=6),
        # An edit, asked and allowed.
        Reply.tool("read_file", {"path": "notes.txt"}),
        Reply.tool("edit_file", {"path": "notes.txt", "old_string": "red", "new_string": "blue"}),
        Reply.text("Changed it."),
        # A new file, asked and rejected: the turn stops there.
        Reply.tool("write_file", {"path": "secret.txt", "content": "nope\n"}),
        # A command whose question the client cancels.
        Reply.tool("bash", {"command": "touch ran.txt"}),
        # A long answer the client cancels mid-stream (the stream stalls after a few events).
        Reply.stall("Long.\nThis answer will be cut off by the editor before its end.", after=7,
                    chunk_size=5),
        Reply.text("Back after the cancel."),
        # Plan mode: the write is refused by the mode, without a question.
        Reply.tool("write_file", {"path": "plan.txt", "content": "x\n"}),
        Reply.text("Plan mode kept me from writing."),
        Reply.text("Opus here."),
        Reply.text("Hello, Ada!"),
        Reply.text(f"Your key is {KEY}."),
    )
    client = RecordingClient(answers=["allow_once", "reject", CANCEL])
    transcript = Transcript()

    async def first_conversation() -> str:
        async with loom_acp(client, workspace, env, transcript=transcript) as (conn, _):
            init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            assert init.protocol_version == 1
            assert init.agent_info is not None and init.agent_info.name == "loom"
            caps = init.agent_capabilities
            assert caps is not None and caps.load_session and caps.prompt_capabilities is not None
            assert caps.prompt_capabilities.embedded_context and not caps.prompt_capabilities.image

            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = new.session_id
            await client.wait_until(lambda c: "available_commands_update" in c.kinds(sid))
            offered_first = client.of_kind("available_commands_update")
            assert new.modes is not None and new.modes.current_mode_id == "default"
            assert [m.id for m in new.modes.available_modes] == ["default", "accept-edits", "plan"]

            # Streamed text.
            done = await conn.prompt(session_id=sid, prompt=_text("say hello"))
            assert done.stop_reason == "end_turn"
            first_reply = client.text(sid)
            assert first_reply.startswith("Loom: this project is not trusted, so it left out project settings")
            assert "accept-edits" in first_reply.splitlines()[0]
            assert first_reply.endswith("\n\n" + STREAMED)
            # Streamed a line at a time (the redactor sees each line whole): the notice, 3 lines.
            assert client.kinds(sid).count("agent_message_chunk") == 4

            # An edit asked and allowed: the question shows the diff, the file changes.
            client.forget()
            done = await conn.prompt(session_id=sid, prompt=_text("make it blue"))
            assert done.stop_reason == "end_turn" and "not trusted" not in client.text(sid)  # said once
            assert (workspace / "notes.txt").read_text() == "colour: blue\n"
            question = client.questions[0]
            assert [(o.option_id, o.kind) for o in question.options] == [
                ("allow_once", "allow_once"), ("allow_session", "allow_always"), ("allow_project", "allow_always"),
                ("reject", "reject_once")]
            assert "edit_file(./notes.txt)" in question.options[1].name  # what "always" saves
            diff = question.tool_call.content[0]
            assert diff.type == "diff" and diff.path == str(workspace / "notes.txt")
            assert "red" in (diff.old_text or "") and "blue" in diff.new_text
            call_id = question.tool_call.tool_call_id
            edit_updates = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == call_id]
            assert [u.status for u in edit_updates] == ["in_progress", "completed"]
            started = [u for u in client.of_kind("tool_call") if u.kind == "edit"]
            assert started[0].locations[0].path == str(workspace / "notes.txt")

            # One rejected: nothing written, the turn stops, the model is told next time.
            client.forget()
            done = await conn.prompt(session_id=sid, prompt=_text("write a secret"))
            assert done.stop_reason == "cancelled"
            assert not (workspace / "secret.txt").exists()
            refused = client.of_kind("tool_call_update")[-1]
            assert refused.status == "failed" and REFUSED in refused.content[0].content.text

            # A question the client cancels cancels the run; nothing ran.
            client.forget()
            done = await conn.prompt(session_id=sid, prompt=_text("touch a file"))
            assert done.stop_reason == "cancelled" and not (workspace / "ran.txt").exists()
            assert client.questions[0].tool_call.kind == "execute"

            # A cancel mid-stream: the prompt answers cancelled, the next prompt works.
            client.forget()
            running = asyncio.create_task(conn.prompt(session_id=sid, prompt=_text("tell me a long story")))
            await client.wait_until(lambda c: "Long." in c.text(sid))
            await conn.cancel(session_id=sid)
            assert (await running).stop_reason == "cancelled"
            done = await conn.prompt(session_id=sid, prompt=_text("are you there?"))
            assert done.stop_reason == "end_turn" and client.text(sid).endswith("Back after the cancel.")
            assert any(REFUSED in result for result in _tool_results(fake_llm.requests[-1].messages))

            # Plan mode refuses the write without asking.
            await conn.set_session_mode(session_id=sid, mode_id="plan")
            client.forget()
            done = await conn.prompt(session_id=sid, prompt=_text("write a plan file"))
            assert done.stop_reason == "end_turn" and not client.questions
            assert not (workspace / "plan.txt").exists()

            # The model option: the next request goes to the chosen model.
            changed = await conn.set_config_option(config_id="model", session_id=sid, value="claude-opus-4-7")
            assert changed.config_options[0].current_value == "claude-opus-4-7"
            done = await conn.prompt(session_id=sid, prompt=_text("which model?"))
            assert done.stop_reason == "end_turn" and fake_llm.requests[-1].body["model"] == "claude-opus-4-7"
            # A custom command: offered as the session's command, run with its arguments.
            offered = offered_first
            assert any(c.name == "greet" and c.description.startswith("Greet someone")
                       for c in offered[0].available_commands)
            done = await conn.prompt(session_id=sid, prompt=_text("/greet Ada"))
            assert done.stop_reason == "end_turn" and "Say a warm hello to Ada." in json.dumps(
                fake_llm.requests[-1].messages[-1])
            with pytest.raises(RequestError, match="command of the chat"):
                await conn.prompt(session_id=sid, prompt=_text("/clear"))

            # Secrets are redacted from what the editor gets.
            client.forget()
            await conn.prompt(session_id=sid, prompt=_text("what is my key?"))
            assert client.text(sid).startswith("Your key is ") and KEY not in client.text(sid)
            return sid

    sid = asyncio.run(first_conversation())
    transcript.save(TRANSCRIPT)
    assert "session/request_permission" in transcript.methods("agent")
    assert "session/cancel" in transcript.methods("client")
    assert KEY not in json.dumps([line["message"] for line in transcript.lines if line["from"] == "agent"])

    # The session file is Loom's own and whole: it loads, with every prompt in it.
    loaded = SessionStore(tmp_path / "data" / "sessions").load(sid)
    assert [m.meta.get("prompt", m.text) for m in loaded.messages if is_prompt(m)] == [
        "say hello", "make it blue", "write a secret", "touch a file", "tell me a long story", "are you there?",
        "write a plan file", "which model?", "/greet Ada", "what is my key?"]

    # A second agent lists it and loads it: the history is replayed, then it goes on, with
    # an MCP server the editor passes (the user's own: used without the project's trust).
    fake_llm.enqueue(Reply.text("Still here."))
    again = RecordingClient()

    async def load_it() -> None:
        async with loom_acp(again, workspace, env, transcript=transcript) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            listed = await conn.list_sessions(cwd=str(workspace))
            assert [s.session_id for s in listed.sessions] == [sid]
            assert listed.sessions[0].title == "say hello"
            with pytest.raises(RequestError, match="no session"):
                await conn.load_session(cwd=str(workspace), session_id="20200101-000000-000000", mcp_servers=[])
            server = McpServerStdio(name="double", command=sys.executable, args=[str(MISBEHAVING)], env=[])
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[server])
            assert again.text(sid, "user_message_chunk").startswith("say hellomake it blue")
            assert STREAMED in again.text(sid)
            replayed = {u.title: u.status for u in again.of_kind("tool_call")}
            assert replayed["Edit notes.txt"] == "completed" and replayed["Edit secret.txt"] == "failed"
            done = await conn.prompt(session_id=sid, prompt=_text("one more"))
            assert done.stop_reason == "end_turn" and again.text(sid).endswith("Still here.")

    asyncio.run(load_it())
    transcript.save(TRANSCRIPT)  # both connections, one after the other
    last = fake_llm.requests[-1].body
    sent = json.dumps(last["messages"])
    assert "make it blue" in sent and "one more" in sent
    assert "mcp__double__peek" in [tool["name"] for tool in last["tools"]]
