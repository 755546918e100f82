"""What a hook's exit code and output mean, and how parallel hooks' answers combine.

Exit 0: stdout is JSON when it starts with ``{`` (for UserPromptSubmit and SessionStart
plain stdout is context for the model). Exit 2 blocks, with or without a message on
stderr (Loom gives a default reason naming the hook when stderr is empty). Any other
exit is a non-blocking error shown to the user — unless the hook is ``fail_closed``,
where it blocks, as do a timeout and a command that cannot start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .config import HookCommand, HookEventName
from .runner import RawRun, command_line

Decision = Literal["allow", "deny", "ask"]
Outcome = Literal["ok", "blocked", "error", "timeout"]
_PLAIN_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")


@dataclass(frozen=True)
class HookResult:
    """One hook's answer."""

    hook: HookCommand
    outcome: Outcome
    duration_ms: float = 0.0
    message: str = ""  # one line for the user
    reason: str = ""  # for the model, when blocked
    decision: Decision | None = None
    decision_reason: str = ""
    updated_input: Mapping[str, Any] | None = None
    context: str = ""
    system_message: str = ""
    stop: bool = False  # "continue": false
    stop_reason: str = ""


@dataclass(frozen=True)
class HookVerdict:
    """The answers of all the hooks that ran for one event, combined (deny wins)."""

    results: tuple[HookResult, ...] = ()
    blocked: bool = False
    reason: str = ""
    decision: Decision | None = None
    decision_reason: str = ""
    updated_input: Mapping[str, Any] | None = None
    context: str = ""
    stop: bool = False
    stop_reason: str = ""


def describe(hook: HookCommand) -> str:
    line = command_line(hook)
    # The end of a long line names the script (its folder is the long part).
    return f"`{line if len(line) <= 80 else '...' + line[-77:]}`"


def interpret(hook: HookCommand, event: HookEventName, raw: RawRun) -> HookResult:
    name = describe(hook)
    ms = raw.duration_ms
    if raw.aborted:
        return HookResult(hook, "error", ms, message="stopped: the run was interrupted")
    if raw.timed_out or raw.failure:
        what = f"timed out after {hook.timeout_s:g} s" if raw.timed_out else raw.failure
        if hook.fail_closed:
            reason = f"hook {name} {what}; it is fail-closed, so this counts as a block"
            return HookResult(hook, "blocked", ms, message=reason, reason=reason, decision="deny")
        return HookResult(hook, "timeout" if raw.timed_out else "error", ms, message=what)
    stderr = raw.stderr.strip()
    if raw.exit_code == 2:
        reason = stderr or f"blocked by hook {name} (exit code 2, no message)"
        return HookResult(hook, "blocked", ms, message=_one_line(reason), reason=reason, decision="deny")
    if raw.exit_code != 0:
        what = f"exited with code {raw.exit_code}" + (f": {_one_line(stderr)}" if stderr else "")
        if hook.fail_closed:
            reason = f"hook {name} {what}; it is fail-closed, so this counts as a block"
            return HookResult(hook, "blocked", ms, message=_one_line(reason), reason=reason, decision="deny")
        return HookResult(hook, "error", ms, message=what)
    stdout = raw.stdout.strip()
    if stdout.startswith("{"):
        try:
            data = json.loads(stdout)
        except ValueError as error:
            return HookResult(hook, "error", ms, message=f"printed output that is not valid JSON: {error}")
        if isinstance(data, Mapping):
            return _from_json(hook, event, data, ms)
    if event in _PLAIN_CONTEXT_EVENTS and stdout:
        return HookResult(hook, "ok", ms, context=stdout)
    return HookResult(hook, "ok", ms)


def _from_json(hook: HookCommand, event: HookEventName, data: Mapping[str, Any], ms: float) -> HookResult:
    name = describe(hook)
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, Mapping) else {}
    decision: Decision | None = None
    decision_reason = _text(specific.get("permissionDecisionReason")) or _text(data.get("reason"))
    wanted = specific.get("permissionDecision")
    if wanted in ("allow", "deny", "ask"):
        decision = wanted
    # The older spelling: a top-level "approve" / "block".
    top = data.get("decision")
    if decision is None and top == "approve":
        decision = "allow"
    # PermissionRequest answers with {"decision": {"behavior": "allow"|"deny", "message"}}.
    answer = specific.get("decision")
    updated = specific.get("updatedInput")
    if isinstance(answer, Mapping) and answer.get("behavior") in ("allow", "deny"):
        decision = answer["behavior"]
        decision_reason = _text(answer.get("message")) or decision_reason
        updated = answer.get("updatedInput", updated)
    blocked = top == "block" or decision == "deny"
    reason = ""
    if blocked:
        reason = _text(data.get("reason")) or decision_reason or f"blocked by hook {name}"
    stop = data.get("continue") is False
    stop_reason = _text(data.get("stopReason"))
    context = _text(specific.get("additionalContext"))
    return HookResult(
        hook, "blocked" if blocked or stop else "ok", ms, message=_one_line(reason or stop_reason),
        reason=reason, decision="deny" if top == "block" else decision, decision_reason=decision_reason,
        updated_input=updated if isinstance(updated, Mapping) else None, context=context,
        system_message=_text(data.get("systemMessage")), stop=stop, stop_reason=stop_reason)


def combine(results: Sequence[HookResult]) -> HookVerdict:
    """Deny beats ask beats allow; every block's reason is kept; contexts are joined."""
    decisions = {r.decision for r in results if r.decision}
    decision: Decision | None = next((d for d in ("deny", "ask", "allow") if d in decisions), None)
    blocked = [r for r in results if r.outcome == "blocked" and (r.reason or not r.stop)]
    updated = next((r.updated_input for r in results if r.updated_input is not None), None)
    return HookVerdict(
        results=tuple(results), blocked=bool(blocked), reason="\n".join(r.reason for r in blocked if r.reason),
        decision=decision,
        decision_reason="\n".join(r.decision_reason for r in results if r.decision == decision and r.decision_reason),
        updated_input=updated, context="\n\n".join(r.context for r in results if r.context),
        stop=any(r.stop for r in results), stop_reason="\n".join(r.stop_reason for r in results if r.stop_reason))


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."
