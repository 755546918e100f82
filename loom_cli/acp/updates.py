"""Engine events as ACP ``session/update``s: a thin adapter, one run at a time.

Permission questions and the run's end are the server's (they answer or end a request);
everything else the client is shown comes from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loom_engine.events import (
    TERMINAL_EVENTS,
    Aborted,
    AgentEvent,
    BudgetExceeded,
    Finished,
    MaxTurnsReached,
    PermissionAnswered,
    TextDelta,
    ThinkingDelta,
    TodosUpdated,
    ToolCallStarted,
    ToolFinished,
    ToolProgress,
    TurnStarted,
    UsageUpdated,
)
from loom_engine.usage import Usage as LoomUsage

from ..held_text import HeldText
from .sdk import (
    AgentPlanUpdate,
    Cost,
    PlanEntry,
    PlanEntryStatus,
    SessionUpdate,
    StopReason,
    ToolCallProgress,
    ToolCallStart,
    Usage,
    UsageUpdate,
    agent_text,
    agent_thought,
    text_content,
)
from .tool_calls import result_content, tool_kind, tool_locations, tool_title

# How many of a running command's last output lines the editor is shown live (the whole
# output comes with the call's end).
_LIVE_LINES = 40
# The providers' stop reasons ACP has words for; any other ends the turn normally.
_FINISH_REASONS: dict[str, StopReason] = {"end_turn": "end_turn", "max_tokens": "max_tokens", "refusal": "refusal"}
_PLAN_STATUSES: dict[str, PlanEntryStatus] = {"pending": "pending", "in_progress": "in_progress",
                                               "completed": "completed"}


@dataclass
class EventAdapter:
    """Turns one run's events into updates; ``root`` makes the tools' paths absolute."""

    root: Path
    _running: set[str] = field(default_factory=set)  # calls already said to be in progress
    _output: dict[str, list[str]] = field(default_factory=dict)  # a running call's last lines
    # The answer's and the thinking's text, given out as the redactor can read it whole.
    _text: HeldText = field(default_factory=HeldText)
    _thought: HeldText = field(default_factory=HeldText)
    # The turn's usage, said once its tool calls are done: a harness (Harbor) ends a step
    # at a usage update, so one sent at the answer's end would part the calls from it.
    _usage: UsageUpdate | None = None

    def updates(self, event: AgentEvent) -> list[SessionUpdate]:
        if event.depth == 0 and isinstance(event, (TurnStarted, *TERMINAL_EVENTS)) and self._usage is not None:
            usage, self._usage = self._usage, None
            return [*self._said(self._text, agent_text), *self._said(self._thought, agent_thought), usage,
                    *self._other(event)]
        # A sub-agent's words reach its parent as the task's result; its tool calls are
        # shown (they are edits and commands the user wants to see).
        if isinstance(event, TextDelta) and event.depth == 0:
            return [*self._said(self._thought, agent_thought), *self._said(self._text, agent_text, event.text)]
        if isinstance(event, ThinkingDelta) and event.depth == 0:
            return [*self._said(self._text, agent_text), *self._said(self._thought, agent_thought, event.text)]
        return [*self._said(self._text, agent_text), *self._said(self._thought, agent_thought), *self._other(event)]

    def _other(self, event: AgentEvent) -> list[SessionUpdate]:
        match event:
            case ToolCallStarted():
                return [self._started(event.call_id, event.name, event.input)]
            case PermissionAnswered(decision=decision) if decision != "deny":
                return self._in_progress(event.call_id)
            case ToolProgress():
                return [*self._in_progress(event.call_id), self._progress(event.call_id, event.text)]
            case ToolFinished():
                return [self._finished(event)]
            case TodosUpdated() if event.depth == 0:
                return [plan_update(event.todos)]
            case UsageUpdated() if event.depth == 0 and event.context_window > 0:
                self._usage = UsageUpdate(session_update="usage_update", used=event.context_tokens,
                                          size=event.context_window,
                                          cost=Cost(amount=event.total_cost_usd, currency="USD"))
        return []

    @staticmethod
    def _said(held: HeldText, make: Callable[[str], SessionUpdate], piece: str | None = None) -> list[SessionUpdate]:
        """What of ``held`` may go out now: with ``piece`` added, its whole lines; without,
        all of it (the stream moved on)."""
        out = held.take(piece) if piece is not None else held.flush()
        return [make(out)] if out else []

    def _started(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> ToolCallStart:
        return ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=tool_title(name, arguments),
                             kind=tool_kind(name), status="pending", raw_input=dict(arguments),
                             locations=tool_locations(arguments, self.root))

    def _in_progress(self, call_id: str) -> list[SessionUpdate]:
        if call_id in self._running:
            return []
        self._running.add(call_id)
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")]

    def _progress(self, call_id: str, line: str) -> ToolCallProgress:
        """A running command's output so far (its last lines: each update replaces the last)."""
        lines = self._output.setdefault(call_id, [])
        lines.append(line)
        del lines[:-_LIVE_LINES]
        return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                content=[text_content("\n".join(lines))])

    def _finished(self, event: ToolFinished) -> ToolCallProgress:
        self._running.discard(event.call_id)
        self._output.pop(event.call_id, None)
        # A refused call (a rule, a hook, the user's no) failed, and says why.
        failed = event.is_error or event.denied
        return ToolCallProgress(session_update="tool_call_update", tool_call_id=event.call_id,
                                status="failed" if failed else "completed",
                                content=result_content(event.name, event.content, event.display, self.root),
                                # The result as the model read it: what a harness (Harbor) keeps as the
                                # observation, since a diff carries no text.
                                raw_output={"output": event.content, **({"refused": True} if event.denied else {})})


def plan_update(todos: tuple[Mapping[str, Any], ...]) -> AgentPlanUpdate:
    """Loom's todo list as the client's plan (Loom's todos have no priority: all medium)."""
    entries = [PlanEntry(content=str(todo.get("content", "")), priority="medium",
                         status=_PLAN_STATUSES.get(str(todo.get("status")), "pending"))
               for todo in todos]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def stop_reason_for(final: AgentEvent | None) -> StopReason | None:
    """Why the prompt ended, in ACP's words; None when it failed (an error, or no end)."""
    match final:
        case Finished():
            return _FINISH_REASONS.get(final.stop_reason, "end_turn")  # max_tokens: the answer was cut off
        case MaxTurnsReached():
            return "max_turn_requests"
        case Aborted():
            # Cancelled by the client, or the user's rejection stopped the turn (the chat's
            # "n"): either way the user stopped it, and the transcript is whole.
            return "cancelled"
        case BudgetExceeded():
            return "end_turn"  # ACP has no budget reason; the answer says it
    return None


def prompt_usage(usage: LoomUsage) -> Usage:
    """The prompt's tokens as ACP counts them (cache reads and writes are input too)."""
    return Usage(total_tokens=usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens
                 + usage.cache_creation_input_tokens,
                 input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 thought_tokens=usage.reasoning_tokens or None,
                 cached_read_tokens=usage.cache_read_input_tokens or None,
                 cached_write_tokens=usage.cache_creation_input_tokens or None)
