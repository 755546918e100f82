"""What a hook's exit code and output mean, and how parallel answers combine."""

from __future__ import annotations

import json

from loom_engine.hooks.config import HookCommand, HookEventName
from loom_engine.hooks.outcome import HookResult, combine, interpret
from loom_engine.hooks.runner import RawRun

GUARD = HookCommand(event="PreToolUse", matcher="Bash", command="./guard.sh", source=".claude/settings.json")


def _json(data: object, event: HookEventName = "PreToolUse") -> HookResult:
    return interpret(GUARD, event, RawRun(0, stdout=json.dumps(data)))


def test_exit_2_blocks_with_stderr_or_a_default_reason() -> None:
    said = interpret(GUARD, "PreToolUse", RawRun(2, stderr="no rm -rf\n"))
    silent = interpret(GUARD, "PreToolUse", RawRun(2))
    assert (said.outcome, said.reason) == ("blocked", "no rm -rf")
    assert silent.outcome == "blocked" and "./guard.sh" in silent.reason and "exit code 2" in silent.reason


def test_other_exit_codes_are_errors_unless_fail_closed() -> None:
    assert interpret(GUARD, "PreToolUse", RawRun(1, stderr="boom")).outcome == "error"
    strict = HookCommand(event="PreToolUse", matcher="", command="x", fail_closed=True)
    result = interpret(strict, "PreToolUse", RawRun(1, stderr="boom"))
    assert result.outcome == "blocked" and "exited with code 1: boom" in result.reason
    assert interpret(strict, "PreToolUse", RawRun(None, timed_out=True)).outcome == "blocked"
    assert interpret(strict, "PreToolUse", RawRun(None, failure="could not start: no such file")).outcome == "blocked"
    assert interpret(GUARD, "PreToolUse", RawRun(None, timed_out=True)).outcome == "timeout"


def test_plain_stdout_is_context_only_for_prompt_and_session_start() -> None:
    assert interpret(GUARD, "UserPromptSubmit", RawRun(0, stdout="branch: main\n")).context == "branch: main"
    assert interpret(GUARD, "SessionStart", RawRun(0, stdout="hi")).context == "hi"
    assert interpret(GUARD, "PreToolUse", RawRun(0, stdout="hi")).context == ""


def test_json_fields() -> None:
    denied = _json({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}})
    assert denied.outcome == "blocked" and denied.reason == "no"
    block = _json({"decision": "block", "reason": "fix the lint first"}, "PostToolUse")
    assert block.reason == "fix the lint first"
    stop = _json({"continue": False, "stopReason": "budget spent", "systemMessage": "stopping"})
    assert (stop.stop, stop.stop_reason, stop.system_message) == (True, "budget spent", "stopping")
    updated = _json({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}})
    assert updated.decision == "allow" and updated.updated_input == {"command": "ls"}
    request = _json({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not now"}}},
                    "PermissionRequest")
    assert request.decision == "deny" and request.reason == "not now"


def test_output_that_is_not_json_is_an_error() -> None:
    result = interpret(GUARD, "PreToolUse", RawRun(0, stdout="{not json"))
    assert result.outcome == "error" and "not valid JSON" in result.message


def test_deny_wins_then_ask_then_allow() -> None:
    allow = _json({"hookSpecificOutput": {"permissionDecision": "allow"}})
    ask = _json({"hookSpecificOutput": {"permissionDecision": "ask"}})
    deny = _json({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}})
    assert combine([allow, ask]).decision == "ask"
    verdict = combine([allow, deny, ask])
    assert verdict.decision == "deny" and verdict.blocked and verdict.reason == "no"
