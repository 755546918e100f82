"""PreToolUse hooks written as Claude Code users write them: they block, rewrite or
approve a call before Loom asks for permission, and the model reads what they decided."""

from __future__ import annotations

import time
from pathlib import Path

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.integration.hooks.helpers import agent, collect, hook_runs, hooks, on, result_text, script, tool_results

# The classic guard from Claude Code's hook guides: a bash script that reads the JSON
# on stdin (python for the parsing, no jq) and refuses rm -rf.
GUARD = r'''#!/usr/bin/env bash
input=$(cat)
command=$(printf '%s' "$input" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command",""))')
if [[ "$command" == *"rm -rf"* ]]; then
  {message}
  exit 2
fi
exit 0
'''


def _guard(workspace: Path, message: str) -> str:
    return str(script(workspace, "guard.sh", GUARD.replace("{message}", message)))


async def test_exit_2_blocks_rm_rf_and_the_model_reads_the_hooks_stderr(workspace: Path,
                                                                         fake_llm: FakeLLMServer) -> None:
    (workspace / "build").mkdir()
    guard = _guard(workspace, 'echo "rm -rf is not allowed here; delete files one by one" >&2')
    fake_llm.enqueue(Reply.tool("bash", {"command": "rm -rf build"}, id="call_rm"), Reply.text("ok, I will not"))
    loom = agent(workspace, fake_llm, hooks(on("PreToolUse", guard, "Bash")))
    events = await collect(loom, "clean up")
    assert (workspace / "build").is_dir()
    [block] = tool_results(fake_llm.requests[1])
    assert block["is_error"] is True
    assert "rm -rf is not allowed here; delete files one by one" in result_text(block)
    [ran] = hook_runs(events)
    assert (ran.event, ran.outcome, ran.call_id) == ("PreToolUse", "blocked", "call_rm")
    assert "not allowed" in ran.message


async def test_exit_2_with_empty_stderr_still_blocks(workspace: Path, fake_llm: FakeLLMServer) -> None:
    (workspace / "build").mkdir()
    guard = _guard(workspace, ":")  # says nothing, exits 2
    fake_llm.enqueue(Reply.tool("bash", {"command": "rm -rf build"}), Reply.text("ok"))
    loom = agent(workspace, fake_llm, hooks(on("PreToolUse", guard, "Bash")))
    events = await collect(loom, "clean up")
    assert (workspace / "build").is_dir()
    [block] = tool_results(fake_llm.requests[1])
    text = result_text(block)
    assert block["is_error"] is True and "Blocked by a PreToolUse hook" in text and "guard.sh" in text
    assert hook_runs(events)[0].outcome == "blocked"


async def test_a_harmless_command_passes_the_guard(workspace: Path, fake_llm: FakeLLMServer) -> None:
    guard = _guard(workspace, 'echo "no" >&2')
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo still here"}), Reply.text("ok"))
    events = await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", guard, "Bash"))), "go")
    [block] = tool_results(fake_llm.requests[1])
    assert "still here" in result_text(block) and not block.get("is_error")
    assert hook_runs(events)[0].outcome == "ok"


async def test_a_hook_that_times_out_is_not_a_block(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo ran"}), Reply.text("ok"))
    slow = hooks(on("PreToolUse", "sleep 600", "Bash", timeout=1))
    started = time.monotonic()
    events = await collect(agent(workspace, fake_llm, slow), "go")
    # The sleep was killed at its timeout, not waited out: a bound far from both a loaded
    # machine's seconds and the sleep's ten minutes.
    assert time.monotonic() - started < 120
    [block] = tool_results(fake_llm.requests[1])
    assert "ran" in result_text(block) and not block.get("is_error")
    [ran] = hook_runs(events)
    assert ran.outcome == "timeout" and "timed out after 1 s" in ran.message


async def test_a_fail_closed_hook_that_times_out_blocks(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    slow = hooks(on("PreToolUse", "sleep 30", "Bash", timeout=1, fail_closed=True))
    events = await collect(agent(workspace, fake_llm, slow), "go")
    assert not (workspace / "ran.txt").exists()
    [block] = tool_results(fake_llm.requests[1])
    assert block["is_error"] is True and "timed out after 1 s" in result_text(block)
    assert hook_runs(events)[0].outcome == "blocked"


async def test_a_fail_closed_hook_that_crashes_blocks(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    crashing = hooks(on("PreToolUse", "python3 -c 'raise SystemExit(3)'", "Bash", fail_closed=True))
    await collect(agent(workspace, fake_llm, crashing), "go")
    assert not (workspace / "ran.txt").exists()
    assert "exited with code 3" in result_text(tool_results(fake_llm.requests[1])[0])


async def test_a_crashing_hook_is_shown_but_does_not_block(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    crashing = hooks(on("PreToolUse", "echo 'lint config missing' >&2; exit 1", "Bash"))
    events = await collect(agent(workspace, fake_llm, crashing), "go")
    assert (workspace / "ran.txt").exists()
    [ran] = hook_runs(events)
    assert ran.outcome == "error" and "exited with code 1: lint config missing" in ran.message


REWRITE = r'''#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                         "updatedInput": %s}}))
'''


async def test_updated_input_that_fails_validation_refuses_the_call(workspace: Path,
                                                                     fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "rewrite.py", REWRITE % '{"command": data["tool_input"]["command"], "timeout": "soon"}')
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", str(hook), "Bash"))), "go")
    assert not (workspace / "ran.txt").exists()
    [block] = tool_results(fake_llm.requests[1])
    text = result_text(block)
    assert block["is_error"] is True
    assert "changed the arguments and they are not valid" in text and "timeout" in text


async def test_updated_input_rewrites_the_call(workspace: Path, fake_llm: FakeLLMServer) -> None:
    # Written for Claude Code's Write tool: file_path and content.
    hook = script(workspace, "rewrite.py", REWRITE % '{"file_path": data["tool_input"]["file_path"], '
                                                    '"content": data["tool_input"]["content"].upper()}')
    fake_llm.enqueue(Reply.tool("write_file", {"path": "notes.txt", "content": "quiet words\n"}), Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", str(hook), "Write"))), "go")
    assert (workspace / "notes.txt").read_text() == "QUIET WORDS\n"
    assert not tool_results(fake_llm.requests[1])[0].get("is_error")


APPROVE = r'''#!/usr/bin/env python3
import json, sys
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "%s",
                                         "permissionDecisionReason": "the approver said so"}}))
'''


async def test_an_allow_answers_the_question_in_a_headless_run(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "approve.py", APPROVE % "allow")
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    manager = PermissionManager(Workspace.at(workspace))
    await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", str(hook), "Bash")), permissions=manager), "go")
    assert (workspace / "ran.txt").exists()


async def test_without_the_hook_the_same_call_is_denied(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    manager = PermissionManager(Workspace.at(workspace))
    await collect(agent(workspace, fake_llm, hooks({}), permissions=manager), "go")
    assert not (workspace / "ran.txt").exists()


async def test_an_allow_never_beats_a_deny_rule(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "approve.py", APPROVE % "allow")
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    manager = PermissionManager(Workspace.at(workspace), layers=[RuleLayer("cli", deny=("bash(touch:*)",))])
    await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", str(hook), "Bash")), permissions=manager), "go")
    assert not (workspace / "ran.txt").exists()
    [block] = tool_results(fake_llm.requests[1])
    assert block["is_error"] is True and "Permission denied" in result_text(block)


async def test_a_deny_wins_over_a_parallel_allow(workspace: Path, fake_llm: FakeLLMServer) -> None:
    allow = script(workspace, "approve.py", APPROVE % "allow")
    deny = workspace / ".claude" / "hooks" / "deny.py"
    deny.write_text((APPROVE % "deny").replace("the approver said so", "the reviewer said no"))
    table = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(allow)},
                                                          {"type": "command", "command": f"python3 {deny}"}]}]}
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    events = await collect(agent(workspace, fake_llm, hooks(table)), "go")
    assert not (workspace / "ran.txt").exists()
    assert "the reviewer said no" in result_text(tool_results(fake_llm.requests[1])[0])
    assert sorted(r.outcome for r in hook_runs(events)) == ["blocked", "ok"]


async def test_an_ask_is_a_denial_in_a_headless_run(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "approve.py", APPROVE % "ask")
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks(on("PreToolUse", str(hook), "Bash"))), "go")
    assert not (workspace / "ran.txt").exists()
    text = result_text(tool_results(fake_llm.requests[1])[0])
    assert "non-interactive run" in text and "the approver said so" in text


async def test_a_permission_request_hook_answers_the_question(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "answer.py", r'''#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
assert data["hook_event_name"] == "PermissionRequest"
behavior = "allow" if data["tool_input"]["command"].startswith("touch") else "deny"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                         "decision": {"behavior": behavior}}}))
''')
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch ran.txt"}), Reply.text("ok"))
    manager = PermissionManager(Workspace.at(workspace))
    events = await collect(agent(workspace, fake_llm, hooks(on("PermissionRequest", str(hook), "Bash")),
                                 permissions=manager), "go")
    assert (workspace / "ran.txt").exists()
    assert [(r.event, r.outcome) for r in hook_runs(events)] == [("PermissionRequest", "ok")]
