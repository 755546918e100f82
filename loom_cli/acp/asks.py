"""A permission question as ``session/request_permission``, with Loom's choices.

allow once; always (the rules the question suggests, for this session or saved for the
project: the chat's "a" and "p"); reject — the chat's "n": the call is refused, the
model is told so, and the turn stops. A client that cancels the question cancels the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from loom_engine.events import PermissionRequested
from loom_engine.permissions.answer import Decision

from .sdk import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate
from .tool_calls import display_content, tool_kind, tool_locations, tool_title

# The options' ids: Loom's own decisions, and the refusal.
REJECT = "reject"
_ALLOW: tuple[Decision, ...] = ("allow_once", "allow_session", "allow_project")


@dataclass(frozen=True)
class Reply:
    """What the client answered: a decision for the engine, a rejection, or no answer."""

    kind: Literal["allow", "reject", "cancelled"]
    decision: Decision = "allow_once"


def permission_options(request: PermissionRequested) -> list[PermissionOption]:
    """The choices that work for this question: "always" only when a rule can be saved."""
    options = [PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once")]
    if request.suggested_rules:
        rules = ", ".join(request.suggested_rules)
        options += [PermissionOption(option_id="allow_session", name=f"Always allow {rules} this session",
                                     kind="allow_always"),
                    PermissionOption(option_id="allow_project", name=f"Always allow {rules} in this project",
                                     kind="allow_always")]
    options.append(PermissionOption(option_id=REJECT, name="Reject (stop here)", kind="reject_once"))
    return options


def question_tool_call(request: PermissionRequested, root: Path) -> ToolCallUpdate:
    """The call the question is about, with what it will do (the diff, the command)."""
    content = display_content(request.preview, root)
    return ToolCallUpdate(tool_call_id=request.call_id, title=tool_title(request.tool, request.input),
                          kind=tool_kind(request.tool), status="pending", raw_input=dict(request.input),
                          content=content or None, locations=tool_locations(request.input, root) or None)


def read_reply(response: RequestPermissionResponse) -> Reply:
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return Reply("cancelled")
    for decision in _ALLOW:
        if outcome.option_id == decision:
            return Reply("allow", decision)
    # REJECT, or an id Loom did not offer: saying no is the safe reading.
    return Reply("reject")
