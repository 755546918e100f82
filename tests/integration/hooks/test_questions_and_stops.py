"""A hook that asks for the user's confirmation in the chat, the permission-prompt
notification, ``continue: false``, ``systemMessage``, and the session hooks of ``loom run``."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path

from loom_cli.headless import run_headless
from loom_engine.events import Aborted, AgentEvent, Finished, Notice, PermissionRequested
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.sessions.store import SessionStore
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.processes import marked_sleep, running_with
from tests.integration.hooks.helpers import agent, collect, hook_runs, hooks, result_text, tool_results, user_texts

ASK = ("cat >/dev/null; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", "
       "\"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"network commands need a look\"}}'")


async def test_an_ask_puts_the_question_to_the_user_and_notifies(workspace: Path, fake_llm: FakeLLMServer) -> None:
    table = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": ASK}]}],
             "Notification": [{"matcher": "permission_prompt", "hooks": [
                 {"type": "command", "command": "cat > notification.json"}]}]}
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo hi"}), Reply.text("ok"))
    loom = agent(workspace, fake_llm, hooks(table), interactive=True,
                 permissions=PermissionManager(Workspace.at(workspace)))
    events: list[AgentEvent] = []
    async for event in loom.run("go"):
        events.append(event)
        if isinstance(event, PermissionRequested):
            assert event.reason == "network commands need a look"
            loom.answer_permission(event.request_id, PermissionAnswer("deny", note="not today"))
    assert ("Refused by the user: this call was not run, so nothing it would have done was applied. "
            "Their note: not today") in result_text(
        tool_results(fake_llm.requests[1])[0])
    notification = json.loads((workspace / "notification.json").read_text())
    assert notification["notification_type"] == "permission_prompt" and "bash" in notification["message"]
    assert [r.event for r in hook_runs(events)] == ["PreToolUse", "Notification"]


async def test_continue_false_stops_the_run_after_the_call(workspace: Path, fake_llm: FakeLLMServer) -> None:
    stop = ("cat >/dev/null; echo '{\"continue\": false, \"stopReason\": \"the build is red\", "
            "\"systemMessage\": \"stopping: fix the build first\"}'")
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}, text="running it"), Reply.text("never asked"))
    events = await collect(agent(workspace, fake_llm, hooks(
        {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": stop}]}]})), "go")
    assert len(fake_llm.requests) == 1 and not (workspace / "ran.txt").exists()
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any("stopping: fix the build first" in n for n in notices)
    assert any("a hook stopped the run: the build is red" in n for n in notices)
    assert isinstance(events[-1], Finished)


async def test_loom_run_runs_session_start_and_end(workspace: Path, fake_llm: FakeLLMServer) -> None:
    table = {"SessionStart": [{"matcher": "startup", "hooks": [
                 {"type": "command", "command": "cat >/dev/null; echo 'Deploys happen on Fridays'"}]}],
             "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > end.json"}]}]}
    fake_llm.enqueue(Reply.text("noted"))
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(agent(workspace, fake_llm, hooks(table)), "when do we deploy?", "text", out, err)
    assert code == 0 and out.getvalue() == "noted\n"
    assert any("Deploys happen on Fridays" in t for t in user_texts(fake_llm.requests[0]))
    assert json.loads((workspace / "end.json").read_text())["reason"] == "other"


async def test_loom_run_says_when_a_hook_fails(workspace: Path, fake_llm: FakeLLMServer) -> None:
    table = {"Stop": [{"hooks": [{"type": "command", "command": "cat >/dev/null; echo 'no linter' >&2; exit 1"}]}]}
    fake_llm.enqueue(Reply.text("done"))
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(agent(workspace, fake_llm, hooks(table)), "go", "text", out, err)
    assert code == 0
    line = "loom: Stop hook `cat >/dev/null; echo 'no linter' >&2; exit 1`: exited with code 1: no linter"
    assert line in err.getvalue()


async def test_the_payload_names_the_session_and_its_file(workspace: Path, fake_llm: FakeLLMServer,
                                                          tmp_path: Path) -> None:
    writer = SessionStore(tmp_path / "sessions").create(workspace, provider="anthropic", model="claude-haiku-4-5")
    table = {"Stop": [{"hooks": [{"type": "command", "command": "cat > stop.json"}]}]}
    fake_llm.enqueue(Reply.text("done"))
    await collect(agent(workspace, fake_llm, hooks(table), session=writer,
                        permissions=PermissionManager(Workspace.at(workspace), mode="accept-edits")), "go")
    payload = json.loads((workspace / "stop.json").read_text())
    assert payload["session_id"] == writer.id and payload["loom_transcript_path"] == str(writer.path)
    assert payload["transcript_path"] == str(writer.path.parent / "claude-code" / writer.path.name)
    assert payload["permission_mode"] == "acceptEdits" and payload["hook_event_name"] == "Stop"
    assert payload["stop_hook_active"] is False and payload["last_assistant_message"] == "done"
    assert "agent_id" not in payload  # only inside sub-agents
    writer.close()


async def test_abort_during_a_prompt_hook_sends_and_keeps_nothing(workspace: Path, fake_llm: FakeLLMServer) -> None:
    sleeping = marked_sleep()  # far longer than the bound below: only the abort ends it in time
    table = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch started; {sleeping}"}]}]}
    loom = agent(workspace, fake_llm, hooks(table))
    run = asyncio.create_task(collect(loom, "hello"))
    deadline = time.monotonic() + 60  # a bound on a hang
    while not (workspace / "started").exists():
        assert time.monotonic() < deadline, "the prompt hook never started"
        await asyncio.sleep(0.05)
    loom.abort()
    events = await asyncio.wait_for(run, 60)
    assert isinstance(events[-1], Aborted) and running_with(sleeping) == []
    assert fake_llm.requests == [] and loom.messages == ()
