"""The permission decision, row by row: how the PreToolUse hooks' answer, the rules'
verdict, the PermissionRequest hooks' answer and a headless run combine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom_engine.permissions.decision import PermissionDecision
from loom_engine.tools import pipeline
from loom_engine.tools.authorize import (
    HOOK_ASK_HINT,
    HOOK_ASKS,
    PENDING,
    Authorization,
    Facts,
    HookAnswer,
    authorize,
    denial_text,
)

NONE = HookAnswer()
ALLOW = HookAnswer("allow", "the hook knows this script")
ASK = HookAnswer("ask", "the hook wants a look")
DENY = HookAnswer("deny", "the hook forbids it")

RULE_ALLOW = PermissionDecision("allow", "allowed by Bash(ls:*)")
RULE_DENY = PermissionDecision("deny", "denied by Bash(rm:*)")
RULE_ASK = PermissionDecision("ask", "writes calc.py", ("Edit(calc.py)",), "--allow 'Edit(calc.py)'")
# A command to run outside the sandbox: only the user may answer.
ESCAPE = PermissionDecision("ask", "runs outside the sandbox", user_only=True)
# The same, covered by an allow rule the user wrote: a run without a user may allow it.
ESCAPE_RULED = PermissionDecision("ask", "runs outside the sandbox", user_only=True, unattended_allow=True)
RULED_ASK = PermissionDecision("ask", "writes calc.py", unattended_allow=True)

HEADLESS = False
ROWS: list[tuple[str, Facts, str, str, str]] = [
    # id, facts, behavior, by, reason
    ("pre-hook deny ends the call before the rules",
     Facts(DENY), "deny", "PreToolUse hook", "the hook forbids it"),
    ("pre-hook deny beats a rule allow",
     Facts(DENY, RULE_ALLOW), "deny", "PreToolUse hook", "the hook forbids it"),
    ("pre-hook deny beats a run without rules",
     Facts(DENY, None), "deny", "PreToolUse hook", "the hook forbids it"),
    ("pre-hook deny without a reason names the hook",
     Facts(HookAnswer("deny")), "deny", "PreToolUse hook", "a PreToolUse hook denied it"),
    ("the rules are heard next",
     Facts(NONE), "ask", "rules", ""),
    ("a pre-hook allow still hears the rules",
     Facts(ALLOW), "ask", "rules", ""),
    ("a deny rule beats a hook's allow",
     Facts(ALLOW, RULE_DENY), "deny", "rules", "denied by Bash(rm:*)"),
    ("a deny rule beats a hook's ask",
     Facts(ASK, RULE_DENY), "deny", "rules", "denied by Bash(rm:*)"),
    ("a deny rule",
     Facts(NONE, RULE_DENY), "deny", "rules", "denied by Bash(rm:*)"),
    ("an allow rule",
     Facts(NONE, RULE_ALLOW), "allow", "rules", "allowed by Bash(ls:*)"),
    ("an allow rule and a hook's allow",
     Facts(ALLOW, RULE_ALLOW), "allow", "rules", "allowed by Bash(ls:*)"),
    ("a hook's allow answers the rules' ask",
     Facts(ALLOW, RULE_ASK), "allow", "PreToolUse hook", "the hook knows this script"),
    ("a hook's allow answers it in a headless run too",
     Facts(ALLOW, RULE_ASK, interactive=HEADLESS), "allow", "PreToolUse hook", "the hook knows this script"),
    ("a pre-hook allow does not answer a user-only ask",
     Facts(ALLOW, ESCAPE), "ask", "PermissionRequest hook", "runs outside the sandbox"),
    ("nor does a PermissionRequest allow",
     Facts(ALLOW, ESCAPE, ALLOW), "ask", "user", "runs outside the sandbox"),
    ("a user-only ask without a user is denied, whatever the hooks allow",
     Facts(ALLOW, ESCAPE, ALLOW, HEADLESS), "deny", "headless run", "runs outside the sandbox"),
    ("a user-only ask an allow rule covers runs headless",
     Facts(NONE, ESCAPE_RULED, NONE, HEADLESS), "allow", "rules", "runs outside the sandbox"),
    ("a user-only ask an allow rule covers is still asked when a user is there",
     Facts(ALLOW, ESCAPE_RULED, ALLOW), "ask", "user", "runs outside the sandbox"),
    ("a PermissionRequest deny answers a user-only ask",
     Facts(NONE, ESCAPE, DENY), "deny", "PermissionRequest hook", "the hook forbids it"),
    ("the rules' ask goes to the PermissionRequest hooks first",
     Facts(NONE, RULE_ASK), "ask", "PermissionRequest hook", "writes calc.py"),
    ("a PermissionRequest allow answers the rules' ask",
     Facts(NONE, RULE_ASK, ALLOW), "allow", "PermissionRequest hook", "the hook knows this script"),
    ("a PermissionRequest deny",
     Facts(NONE, RULE_ASK, DENY), "deny", "PermissionRequest hook", "the hook forbids it"),
    ("a PermissionRequest deny without a reason names the hook",
     Facts(NONE, RULE_ASK, HookAnswer("deny")), "deny", "PermissionRequest hook",
     "a PermissionRequest hook denied it"),
    ("a PermissionRequest deny beats a rule that covers the ask headless",
     Facts(NONE, RULED_ASK, DENY, HEADLESS), "deny", "PermissionRequest hook", "the hook forbids it"),
    ("a PermissionRequest ask leaves it to the user",
     Facts(NONE, RULE_ASK, ASK), "ask", "user", "writes calc.py"),
    ("no PermissionRequest answer: the user is asked",
     Facts(NONE, RULE_ASK, NONE), "ask", "user", "writes calc.py"),
    ("headless, an ask is denied",
     Facts(NONE, RULE_ASK, NONE, HEADLESS), "deny", "headless run", "writes calc.py"),
    ("headless, an ask an allow rule covers runs",
     Facts(NONE, RULED_ASK, NONE, HEADLESS), "allow", "rules", "writes calc.py"),
    ("with a user, an ask an allow rule covers is asked",
     Facts(NONE, RULED_ASK, NONE), "ask", "user", "writes calc.py"),
    ("a hook's ask turns a rule allow into a question",
     Facts(ASK, RULE_ALLOW), "ask", "PermissionRequest hook", "the hook wants a look"),
    ("a hook's ask without a reason",
     Facts(HookAnswer("ask"), RULE_ALLOW), "ask", "PermissionRequest hook", HOOK_ASKS),
    ("a hook's ask a PermissionRequest hook allows",
     Facts(ASK, RULE_ALLOW, ALLOW), "allow", "PermissionRequest hook", "the hook knows this script"),
    ("a hook's ask, headless, is denied",
     Facts(ASK, RULE_ALLOW, NONE, HEADLESS), "deny", "headless run", "the hook wants a look"),
    ("a hook's ask and the rules' ask: the rules' question",
     Facts(ASK, RULE_ASK), "ask", "PermissionRequest hook", "writes calc.py"),
    ("no rules: allowed",
     Facts(NONE, None), "allow", "rules", "no permission rules"),
    ("no rules and a hook's allow: allowed",
     Facts(ALLOW, None), "allow", "rules", "no permission rules"),
    ("no rules and a hook's ask: asked",
     Facts(ASK, None), "ask", "PermissionRequest hook", "the hook wants a look"),
    ("no rules and a hook's ask, headless: denied",
     Facts(ASK, None, NONE, HEADLESS), "deny", "headless run", "the hook wants a look"),
]


@pytest.mark.parametrize(("facts", "behavior", "by", "reason"), [row[1:] for row in ROWS],
                         ids=[row[0] for row in ROWS])
def test_authorize_row(facts: Facts, behavior: str, by: str, reason: str) -> None:
    verdict = authorize(facts)
    assert (verdict.behavior, verdict.by, verdict.reason) == (behavior, by, reason)


def test_every_ask_of_a_hook_or_the_user_carries_its_question() -> None:
    for _, facts, behavior, by, _ in ROWS:
        if behavior == "ask" and by != "rules":
            assert authorize(facts).question is not None, facts


def test_the_rules_question_keeps_what_always_allow_would_save() -> None:
    verdict = authorize(Facts(NONE, RULE_ASK))
    assert verdict.question == RULE_ASK


def test_a_hooks_ask_over_an_allow_rule_tells_a_headless_user_what_to_change() -> None:
    question = authorize(Facts(ASK, RULE_ALLOW, NONE, HEADLESS)).question
    assert question is not None and question.hint == HOOK_ASK_HINT and question.suggested_rules == ()
    # With no rules there is no rule to change: the headless notice falls back to its default.
    without_rules = authorize(Facts(ASK, None, NONE, HEADLESS)).question
    assert without_rules is not None and without_rules.hint == ""


@pytest.mark.parametrize(("denied", "text"), [
    (Authorization("deny", "PreToolUse hook", "no"), "Blocked by a PreToolUse hook: no"),
    (Authorization("deny", "PermissionRequest hook", "no"), "Permission denied by a hook: no"),
    (Authorization("deny", "rules", "denied by Bash(rm:*)"),
     "Permission denied: denied by Bash(rm:*). Do not retry this call unchanged."),
    (Authorization("deny", "headless run", "writes calc.py"),
     "Refused: this is a non-interactive run and writes calc.py; the user has not allowed this action, so it "
     "was not run and nothing it would have done was applied. Do not retry it; finish what you can without "
     "it and say what was not permitted."),
])
def test_what_the_model_reads_for_each_denial(denied: Authorization, text: str) -> None:
    assert denial_text(denied) == text


def test_pending_answers_are_the_default() -> None:
    assert authorize(Facts()) == Authorization("ask", "rules")
    assert Facts().rule is PENDING and Facts().permission_request is PENDING


def test_the_pipeline_numbers_the_stages_its_docstring_lists() -> None:
    doc = pipeline.__doc__ or ""
    listed = re.findall(r"(\d)\. ([A-Za-z]+)", doc)
    source = Path(pipeline.__file__).read_text()
    # run() (format, PostToolUse hooks) comes before _stages() in the file.
    numbered = sorted(re.findall(r"# (\d)\. ([A-Za-z]+)", source))
    assert listed == numbered
    assert [int(n) for n, _ in listed] == list(range(1, len(listed) + 1))
    assert f"The {_WORDS[len(listed)]} stages" in doc


_WORDS = {6: "six", 7: "seven", 8: "eight", 9: "nine"}
