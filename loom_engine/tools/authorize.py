"""Whether a tool call may run: the rules' verdict, the hooks' answers and whether a user
is there to ask, combined in one pure function.

The answers arrive one at a time (PreToolUse hooks, then the rules, then the
PermissionRequest hooks, then the user), and each is needed only if those before it
did not settle the call. So :func:`authorize` takes what is known so far, with
:data:`PENDING` for an answer not yet heard, and says either allow, deny, or ask — and
whom to ask next. The pipeline does the asking (the I/O); every precedence lives here:

- a PreToolUse hook's deny ends the call, whatever the rules say;
- a deny rule stays a deny, whatever a hook answered;
- a hook's allow answers the rules' ask, but never an ask only the user may answer
  (``user_only``: a command to run outside the sandbox);
- a hook's ask turns the rules' allow into a question;
- a run without a user denies what it would ask, unless an allow rule the user wrote
  covers it (``unattended_allow``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Literal

from ..permissions.decision import PermissionDecision

__all__ = ["PENDING", "Authorization", "Facts", "HookAnswer", "Pending", "authorize", "denial_text"]

HOOK_ASKS = "a hook asks to confirm this call"
HOOK_ASK_HINT = "a change to the PreToolUse hook that asks for confirmation"


class Pending(enum.Enum):
    """An answer not heard yet (its askers have not been asked)."""

    PENDING = "pending"


PENDING: Final = Pending.PENDING

# Who answered (allow / deny), or who is to be asked next (ask).
Decider = Literal["PreToolUse hook", "rules", "PermissionRequest hook", "headless run", "user"]


@dataclass(frozen=True)
class HookAnswer:
    """The combined permission answer of the hooks for one event: ``None`` when they did
    not answer. A hook that blocks (exit code 2, a fail-closed failure) answers deny;
    ``reason`` is the text the model reads for a deny, the hook's own reason otherwise."""

    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str = ""


NO_ANSWER: Final = HookAnswer()


@dataclass(frozen=True)
class Facts:
    """What is known about one call so far."""

    pre_tool_use: HookAnswer = NO_ANSWER
    # The rules' decision; None when the run has no rules (everything is allowed).
    rule: PermissionDecision | Pending | None = PENDING
    permission_request: HookAnswer | Pending = PENDING
    interactive: bool = True


@dataclass(frozen=True)
class Authorization:
    behavior: Literal["allow", "deny", "ask"]
    # allow / deny: who decided; ask: who is to be asked next.
    by: Decider
    reason: str = ""
    # The question as the user (or a PermissionRequest hook) sees it: its suggestions,
    # the hint a headless run prints, whether only the user may answer it.
    question: PermissionDecision | None = None


def authorize(facts: Facts) -> Authorization:
    pre = facts.pre_tool_use
    if pre.decision == "deny":
        return Authorization("deny", "PreToolUse hook", pre.reason or "a PreToolUse hook denied it")
    if isinstance(facts.rule, Pending):
        return Authorization("ask", "rules")
    question = _question(facts.rule, pre)
    if isinstance(question, Authorization):
        return question
    answered = facts.permission_request
    if isinstance(answered, Pending):
        return Authorization("ask", "PermissionRequest hook", question.reason, question)
    if answered.decision == "deny":
        return Authorization("deny", "PermissionRequest hook",
                             answered.reason or "a PermissionRequest hook denied it", question)
    if answered.decision == "allow" and not question.user_only:
        return Authorization("allow", "PermissionRequest hook", answered.reason, question)
    if facts.interactive:
        return Authorization("ask", "user", question.reason, question)
    if question.unattended_allow:
        # An allow rule the user wrote covers it.
        return Authorization("allow", "rules", question.reason, question)
    return Authorization("deny", "headless run", question.reason, question)


def _question(rule: PermissionDecision | None, pre: HookAnswer) -> PermissionDecision | Authorization:
    """What the PermissionRequest hooks and the user would be asked, or the answer when
    the rules and the PreToolUse hooks settle it."""
    if rule is None:  # no rules: only a hook's ask stops the call
        if pre.decision != "ask":
            return Authorization("allow", "rules", "no permission rules")
        return PermissionDecision("ask", pre.reason or HOOK_ASKS)
    if rule.behavior == "deny":
        return Authorization("deny", "rules", rule.reason, rule)
    if rule.behavior == "ask":
        if pre.decision == "allow" and not rule.user_only:
            return Authorization("allow", "PreToolUse hook", pre.reason, rule)  # the hook answered it
        return rule
    if pre.decision == "ask":
        return PermissionDecision("ask", pre.reason or HOOK_ASKS, hint=HOOK_ASK_HINT)
    return Authorization("allow", "rules", rule.reason, rule)


def denial_text(denied: Authorization) -> str:
    """What the model reads when a call is denied (a deny by the user is worded where
    the user's note is known)."""
    if denied.by == "PreToolUse hook":
        return f"Blocked by a PreToolUse hook: {denied.reason}"
    if denied.by == "PermissionRequest hook":
        return f"Permission denied by a hook: {denied.reason}"
    if denied.by == "headless run":
        return (f"Refused: this is a non-interactive run and {denied.reason}; the user has not allowed this "
                "action, so it was not run and nothing it would have done was applied. Do not retry it; "
                "finish what you can without it and say what was not permitted.")
    return f"Permission denied: {denied.reason}. Do not retry this call unchanged."
