"""The typed event stream that `Agent.run` yields.

Every event is a small frozen dataclass with a ``type`` tag (used by stream-json
output) and the ids a UI needs to place it: the turn it belongs to, the agent that
produced it and, for sub-agents, the parent's tool call and depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, ClassVar, TypeAlias, TypeGuard, get_args

from .messages import Message
from .usage import Usage


@dataclass(frozen=True, kw_only=True)
class AgentEvent:
    type: ClassVar[str] = "event"
    turn_id: str = ""
    agent_id: str = ""
    parent_tool_use_id: str | None = None
    parent_turn_id: str | None = None
    depth: int = 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        for f in fields(self):
            data[f.name] = _plain(getattr(self, f.name))
        return data


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# The stop reason of an answer the output limit cut off (Anthropic's "max_tokens"; the
# OpenAI provider maps its "length" to it).
STOPPED_AT_OUTPUT_LIMIT = "max_tokens"


@dataclass(frozen=True, kw_only=True)
class TurnStarted(AgentEvent):
    type: ClassVar[str] = "turn_started"
    turn: int


@dataclass(frozen=True, kw_only=True)
class TextDelta(AgentEvent):
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True, kw_only=True)
class ThinkingDelta(AgentEvent):
    type: ClassVar[str] = "thinking_delta"
    text: str


@dataclass(frozen=True, kw_only=True)
class AssistantMessage(AgentEvent):
    """The complete assistant message once its stream ended."""

    type: ClassVar[str] = "assistant_message"
    message: Message


@dataclass(frozen=True, kw_only=True)
class ToolCallStarted(AgentEvent):
    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolProgress(AgentEvent):
    type: ClassVar[str] = "tool_progress"
    call_id: str
    text: str  # one line of the call's output, without its newline


@dataclass(frozen=True, kw_only=True)
class ToolFinished(AgentEvent):
    type: ClassVar[str] = "tool_finished"
    call_id: str
    name: str
    content: str
    is_error: bool
    duration_ms: float
    # What a UI may render besides the text, e.g. {"kind": "diff", "diff": "..."}.
    display: Mapping[str, Any] | None = None
    # The call did not run because it was not permitted (a deny rule, a hook, the user's
    # "no", a headless run's unanswerable question): `loom run`'s permission_denials.
    denied: bool = False


@dataclass(frozen=True, kw_only=True)
class PermissionRequested(AgentEvent):
    type: ClassVar[str] = "permission_requested"
    request_id: str
    call_id: str
    tool: str
    input: Mapping[str, Any]
    reason: str
    # What will happen, for the modal: {"kind": "diff"|"command"|"path", ...}.
    preview: Mapping[str, Any] | None = None
    # Rules that "always allow" would save.
    suggested_rules: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PermissionAnswered(AgentEvent):
    type: ClassVar[str] = "permission_answered"
    request_id: str
    call_id: str
    decision: str  # allow_once | allow_session | allow_project | deny
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class TodosUpdated(AgentEvent):
    type: ClassVar[str] = "todos_updated"
    todos: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, kw_only=True)
class CompactionApplied(AgentEvent):
    type: ClassVar[str] = "compacted"
    tokens_before: int
    tokens_after: int
    method: str  # "summary" | "elide" | "trim"
    reason: str = "auto"


@dataclass(frozen=True, kw_only=True)
class UsageUpdated(AgentEvent):
    type: ClassVar[str] = "usage"
    usage: Usage  # this request
    total: Usage  # this run so far
    cost_usd: float
    total_cost_usd: float
    context_tokens: int = 0
    context_window: int = 0


@dataclass(frozen=True, kw_only=True)
class Retrying(AgentEvent):
    type: ClassVar[str] = "retrying"
    attempt: int
    delay_s: float
    reason: str
    # The stream broke after partial output: the UI must drop what it showed of it.
    discard_partial: bool = False
    # What failed (stream_broken, rate_limit, overloaded...), and the most attempts the
    # request gets, the first one included (0: not known). ``attempt`` is the number
    # of the retry about to happen, so the request's attempt number is attempt + 1.
    kind: str = ""
    max_attempts: int = 0


@dataclass(frozen=True, kw_only=True)
class UsageLimitWait(AgentEvent):
    """A usage limit was hit and the run waits for it to reset, then sends the same
    request again (Esc / Ctrl+C stop the wait like any run). A UI shows a countdown to
    ``until`` (unix seconds); the next event of the agent ends the wait."""

    type: ClassVar[str] = "usage_limit_wait"
    until: float
    wait_s: float
    # The server said when the limit resets (``resets_at``); otherwise the wait is a
    # guess and the request is tried again after it.
    reset_known: bool
    resets_at: float | None = None
    reason: str = ""
    # The wait's number for this request (a server may refuse again after a reset).
    attempt: int = 1


@dataclass(frozen=True, kw_only=True)
class Notice(AgentEvent):
    """A one-line message for the user (warnings, loop guard, skipped skills...)."""

    type: ClassVar[str] = "notice"
    level: str  # info | warning
    message: str


@dataclass(frozen=True, kw_only=True)
class HookRan(AgentEvent):
    """A hook command finished. ``outcome``: ok | blocked (exit 2, a deny or block
    decision, or a fail-closed timeout/crash) | error (non-blocking: another exit code,
    unparsable JSON) | timeout (non-blocking). ``call_id`` names the tool call it ran
    for (PreToolUse, PostToolUse...), so a UI can show the hook's time in that block."""

    type: ClassVar[str] = "hook_ran"
    event: str  # "PreToolUse"...
    command: str
    source: str  # the settings file it came from
    outcome: str
    duration_ms: float
    message: str = ""  # the reason or stderr, one line, for the user
    call_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Finished(AgentEvent):
    type: ClassVar[str] = "finished"
    result: str
    num_turns: int
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    # Why the last answer ended, in the providers' common words: end_turn, or max_tokens
    # when the model's output limit cut it off (``result`` is then incomplete), refusal...
    stop_reason: str = "end_turn"
    # The output limit the last request asked for, in tokens (0: not known), and whether
    # the context window's room lowered it below the max_tokens setting.
    max_output_tokens: int = 0
    output_limited_by_window: bool = False

    @property
    def cut_off(self) -> bool:
        """The answer stopped at the output limit, not where the model meant to end it."""
        return self.stop_reason == STOPPED_AT_OUTPUT_LIMIT


@dataclass(frozen=True, kw_only=True)
class MaxTurnsReached(AgentEvent):
    type: ClassVar[str] = "max_turns_reached"
    max_turns: int
    num_turns: int


@dataclass(frozen=True, kw_only=True)
class BudgetExceeded(AgentEvent):
    type: ClassVar[str] = "budget_exceeded"
    max_budget_usd: float
    cost_usd: float


@dataclass(frozen=True, kw_only=True)
class Aborted(AgentEvent):
    type: ClassVar[str] = "aborted"
    reason: str
    partial_text: str = ""


@dataclass(frozen=True, kw_only=True)
class Error(AgentEvent):
    type: ClassVar[str] = "error"
    message: str
    kind: str  # e.g. auth, rate_limit, usage_limit, connection, bad_request, loop_guard, internal
    # A usage limit's reset (unix seconds), when the server said.
    resets_at: float | None = None


TERMINAL_EVENTS = (Finished, MaxTurnsReached, BudgetExceeded, Aborted, Error)

# Every concrete event the engine emits: a ``match`` over an ``Event`` can end in
# ``assert_never`` and the type checker proves no kind was forgotten. ``AgentEvent`` stays
# the base class (the streams' item type); ``is_event`` narrows one to this union.
Event: TypeAlias = (TurnStarted | TextDelta | ThinkingDelta | AssistantMessage | ToolCallStarted | ToolProgress
                    | ToolFinished | PermissionRequested | PermissionAnswered | TodosUpdated | CompactionApplied
                    | UsageUpdated | Retrying | UsageLimitWait | Notice | HookRan | Finished | MaxTurnsReached
                    | BudgetExceeded | Aborted | Error)
_EVENT_CLASSES: tuple[type[AgentEvent], ...] = get_args(Event)


def is_event(event: AgentEvent) -> TypeGuard[Event]:
    """Whether ``event`` is one of the engine's own kinds (not a bare ``AgentEvent`` or a
    foreign subclass); narrows it to :data:`Event`."""
    return isinstance(event, _EVENT_CLASSES)
