"""What a project's hooks may see of Loom's environment, a permission-prompt
notification that does not hold the call up, Bash's timeout in Claude Code's unit, and
the ``tool_response`` shapes PostToolUse scripts read."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from loom_engine.events import Aborted, AgentEvent, PermissionRequested, ToolFinished
from loom_engine.hooks.config import HookSet, parse_hooks
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.processes import marked_sleep, running_with
from tests.integration.hooks.helpers import agent, collect, hook_runs, hooks, on, result_text, script, tool_results


def _env_file(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


async def test_a_project_hook_does_not_get_looms_credentials_a_user_hook_does(
        workspace: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-for-the-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-for-the-test")
    monkeypatch.setenv("LOOM_DATA_DIR", str(workspace / "data"))
    monkeypatch.setenv("HOOK_TEST_OWN_VAR", "kept")
    entry = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat >/dev/null; env > {}"}]}]}
    project = json.loads(json.dumps(entry).replace("{}", "project.env"))
    user = json.loads(json.dumps(entry).replace("{}", "user.env"))
    project_hooks, problems = parse_hooks(project, source=".claude/settings.json",
                                          in_project=True)
    user_hooks, user_problems = parse_hooks(user, source="user config (~/.config/loom/settings.toml)",
                                            in_project=False)
    assert not problems and not user_problems
    fake_llm.enqueue(Reply.text("ok"))
    await collect(agent(workspace, fake_llm, HookSet((*user_hooks, *project_hooks))), "hello")

    in_project, own = _env_file(workspace / "project.env"), _env_file(workspace / "user.env")
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_DATA_DIR"):
        assert name not in in_project
        assert name in own
    assert not [k for k in in_project if k.startswith("LOOM_") and k != "LOOM_PROJECT_DIR"]
    for env in (in_project, own):
        assert env["LOOM_PROJECT_DIR"] == env["CLAUDE_PROJECT_DIR"] == str(workspace)
        assert env["HOOK_TEST_OWN_VAR"] == "kept" and env.get("PATH")


async def _appears(path: Path, bound_s: float = 30.0) -> None:
    """Wait until ``path`` exists (the bound is a failure limit, not a timing)."""
    deadline = time.monotonic() + bound_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        await asyncio.sleep(0.05)


async def test_a_slow_permission_notification_does_not_hold_the_call(workspace: Path,
                                                                      fake_llm: FakeLLMServer) -> None:
    table = {"Notification": [{"matcher": "permission_prompt", "hooks": [
        # The hook holds until the test releases it after the call has finished: the call can
        # only finish by not waiting for it (no clock is read).
        {"type": "command", "timeout": 60, "command":
         "cat > notification.json; touch started; while [ ! -e release ]; do sleep 0.05; done; touch notified"}]}]}
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt && echo ran"}), Reply.text("done"))
    loom = agent(workspace, fake_llm, hooks(table), interactive=True,
                 permissions=PermissionManager(Workspace.at(workspace)))
    events: list[AgentEvent] = []
    async for event in loom.run("go"):
        events.append(event)
        if isinstance(event, PermissionRequested):
            # Let the notification start before the answer, as when a person reads the question.
            await _appears(workspace / "started")
            loom.answer_permission(event.request_id, PermissionAnswer("allow_once"))
        elif isinstance(event, ToolFinished):
            assert not (workspace / "notified").exists(), "the call waited for the notification hook"
            (workspace / "release").touch()
    assert any(isinstance(e, ToolFinished) for e in events) and (workspace / "release").exists()
    assert "ran" in result_text(tool_results(fake_llm.requests[1])[0])
    # The notification still ran to its end, and the user sees that it did.
    notification = [r for r in hook_runs(events) if r.event == "Notification"]
    assert len(notification) == 1 and notification[0].outcome == "ok" and (workspace / "notified").exists()
    assert json.loads((workspace / "notification.json").read_text())["notification_type"] == "permission_prompt"


async def test_an_abort_during_the_question_stops_the_notification_hook(workspace: Path,
                                                                         fake_llm: FakeLLMServer) -> None:
    sleeping = marked_sleep()  # far longer than the bound below: only a kill ends it in time
    table = {"Notification": [{"matcher": "permission_prompt", "hooks": [
        {"type": "command", "command": f"cat >/dev/null; touch started; {sleeping}; touch finished", "timeout": 900}]}]}
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}))
    loom = agent(workspace, fake_llm, hooks(table), interactive=True,
                 permissions=PermissionManager(Workspace.at(workspace)))
    events: list[AgentEvent] = []

    async def run() -> None:
        async for event in loom.run("go"):
            events.append(event)

    task = asyncio.create_task(run())
    await _appears(workspace / "started")
    loom.abort()
    await asyncio.wait_for(task, 60)  # a bound on a hang: the hook left alone would hold it 600 s
    assert any(isinstance(e, Aborted) for e in events) and not (workspace / "ran.txt").exists()
    assert [r.outcome for r in hook_runs(events) if r.event == "Notification"] == ["error"]  # stopped, and said so
    assert running_with(sleeping) == [] and not (workspace / "finished").exists()


TIMEOUT_GUARD = r'''#!/usr/bin/env python3
# As written for Claude Code: Bash's timeout is in milliseconds; cap it at one second.
import json, sys
data = json.load(sys.stdin)
with open("seen_timeout.txt", "w") as seen:
    seen.write(str(data["tool_input"].get("timeout")))
if data["tool_input"].get("timeout", 120000) > 1000:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                             "updatedInput": {**data["tool_input"], "timeout": 1000}}}))
'''


async def test_a_hook_reads_and_sets_bash_timeout_in_milliseconds(workspace: Path, fake_llm: FakeLLMServer) -> None:
    guard = script(workspace, "timeout_guard.py", TIMEOUT_GUARD)
    fake_llm.enqueue(Reply.tool("bash", {"command": "sleep 20; touch late.txt", "timeout": 30}), Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", str(guard), "Bash"))), "go")
    assert (workspace / "seen_timeout.txt").read_text() == "30000"
    [block] = tool_results(fake_llm.requests[1])
    assert "Timed out after 1 s" in result_text(block)
    assert not (workspace / "late.txt").exists()


RECORD_RESPONSE = r'''#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open("responses.jsonl", "a") as log:
    log.write(json.dumps({"tool": data["tool_name"], "response": data["tool_response"],
                          "loom": data.get("loom_tool_response")}) + "\n")
'''


async def test_post_tool_use_gets_claude_codes_tool_response_shapes(workspace: Path,
                                                                    fake_llm: FakeLLMServer) -> None:
    record = script(workspace, "record.py", RECORD_RESPONSE)
    (workspace / "three.txt").write_text("one\ntwo\nthree\n")
    fake_llm.enqueue(
        Reply.tool("bash", {"command": "echo to-out; echo to-err >&2"}),
        Reply.tool("write_file", {"path": "new.txt", "content": "alpha\n"}),
        Reply.tool("edit_file", {"path": "new.txt", "old_string": "alpha", "new_string": "beta"}),
        Reply.tool("multi_edit", {"path": "new.txt", "edits": [{"old_string": "beta", "new_string": "gamma"}]}),
        Reply.tool("read_file", {"path": "three.txt", "offset": 2}),
        Reply.text("done"))
    table = {"PostToolUse": [{"matcher": "Bash|Write|Edit|MultiEdit|Read",
                              "hooks": [{"type": "command", "command": str(record)}]}]}
    await collect(agent(workspace, fake_llm, hooks(table)), "go")
    logged = [json.loads(line) for line in (workspace / "responses.jsonl").read_text().splitlines()]
    by_tool = {entry["tool"]: entry for entry in logged}
    assert list(by_tool) == ["Bash", "Write", "Edit", "MultiEdit", "Read"]

    bash = by_tool["Bash"]
    assert bash["response"] == {"stdout": "to-out\nto-err", "stderr": "", "interrupted": False, "isImage": False}
    assert "Exit code: 0" in bash["loom"]  # Loom's own text, as the model read it
    new = str(workspace / "new.txt")
    assert by_tool["Write"]["response"] == {"type": "create", "filePath": new, "content": "alpha\n", "success": True}
    assert by_tool["Edit"]["response"] == {"filePath": new, "oldString": "alpha", "newString": "beta",
                                           "replaceAll": False, "success": True}
    assert by_tool["MultiEdit"]["response"]["filePath"] == new
    assert by_tool["MultiEdit"]["response"]["edits"][0]["new_string"] == "gamma"
    assert by_tool["Read"]["response"] == {"type": "text", "file": {
        "filePath": str(workspace / "three.txt"), "content": "two\nthree", "numLines": 2, "startLine": 2,
        "totalLines": 3}}
