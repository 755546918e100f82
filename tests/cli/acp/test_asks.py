from __future__ import annotations

from pathlib import Path

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from loom_cli.acp.asks import permission_options, question_tool_call, read_reply
from loom_engine.events import PermissionRequested


def _request(rules: tuple[str, ...] = ()) -> PermissionRequested:
    return PermissionRequested(request_id="r1", call_id="c1", tool="bash", input={"command": "make"},
                               reason="commands ask", preview={"kind": "command", "command": "make"},
                               suggested_rules=rules)


def _chosen(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))


def test_always_is_offered_only_when_a_rule_can_be_saved() -> None:
    assert [o.option_id for o in permission_options(_request())] == ["allow_once", "reject"]
    with_rules = permission_options(_request(("bash(make:*)",)))
    assert [o.kind for o in with_rules] == ["allow_once", "allow_always", "allow_always", "reject_once"]
    assert "bash(make:*)" in with_rules[1].name


def test_the_question_shows_the_call() -> None:
    call = question_tool_call(_request(), Path("/w"))
    assert (call.tool_call_id, call.kind, call.status, call.title) == ("c1", "execute", "pending", "Run `make`")
    assert call.content[0].content.text == "$ make"


def test_answers_read_as_loom_decisions_and_anything_else_is_a_no() -> None:
    assert read_reply(_chosen("allow_project")).decision == "allow_project"
    assert read_reply(_chosen("reject")).kind == "reject"
    assert read_reply(_chosen("something-else")).kind == "reject"
    assert read_reply(RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))).kind == "cancelled"
