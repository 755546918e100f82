"""Spans, metrics and events from a run's event stream, per the GenAI semantic conventions.

The tree of one prompt: ``invoke_agent loom`` → ``chat {model}`` for each model request
and ``execute_tool {name}`` for each tool call; a sub-agent's ``invoke_agent`` is a child
of the ``execute_tool task`` that started it. The recorder sees each event as its agent
emits it (see :mod:`.observer`), so a tool's span is open before the tool starts and its
commands can carry the span's ``TRACEPARENT``. Imported only when telemetry is on.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ..events import (
    Aborted,
    AgentEvent,
    BudgetExceeded,
    CompactionApplied,
    Error,
    Finished,
    MaxTurnsReached,
    PermissionAnswered,
    PermissionRequested,
    Retrying,
    ToolCallStarted,
    ToolFinished,
    TurnStarted,
    UsageUpdated,
)
from ..mcp.names import is_mcp_name
from ..usage import Usage
from .signals import SCOPE, Signals

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

    from ..redact import Redactor
    from .setup import Telemetry

TASK_TOOL = "task"
_NO_VARIABLES: Mapping[str, str] = {}
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _never_raises(default: _R) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A telemetry bug is logged and forgotten: it must never stop the user's run."""

    def wrap(method: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(method)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return method(*args, **kwargs)
            except Exception:
                logging.getLogger("loom.telemetry").exception("telemetry failed in %s", method.__name__)
                return default

        return guarded

    return wrap
# How a permission answer is counted, in Claude Code's words for where a decision came from.
ANSWER_SOURCES = {"allow_once": "user_temporary", "allow_session": "user_temporary",
                  "allow_project": "user_permanent", "deny": "user_reject"}


@dataclass
class _AgentSpan:
    span: Span
    started: float
    name: str
    model: str = ""  # of its last request: what a compaction's usage is counted under


@dataclass
class _ChatSpan:
    span: Span
    started: float
    model: str
    usage: Usage | None = None
    cost_usd: float = 0.0
    attempts: int = 1


@dataclass
class _ToolSpan:
    span: Span
    agent_id: str
    name: str
    asked_at: float | None = None
    waited_s: float = 0.0
    answer: str | None = None
    subagent: str | None = None  # a task call: the agent it runs
    arguments: str | None = None  # with OTEL_LOG_TOOL_DETAILS only


class TelemetryRecorder:
    """A :class:`~.observer.RunObserver` that records into OpenTelemetry."""

    def __init__(self, telemetry: Telemetry, *, session_id: str | None, redactor: Redactor) -> None:
        self._tracer = telemetry.tracer_provider.get_tracer(SCOPE, telemetry.version)
        self._signals = Signals(telemetry, session_id=session_id, redactor=redactor)
        self._session_id = session_id
        self._agents: dict[str, _AgentSpan] = {}
        self._chats: dict[str, _ChatSpan] = {}  # by agent id: one request at a time
        self._tools: dict[str, _ToolSpan] = {}  # by call id
        self._signals.sessions.add(1, self._signals.attributes())

    # --- the observer --------------------------------------------------------------------

    @_never_raises(None)
    def observe(self, event: AgentEvent) -> None:
        match event:
            case TurnStarted():
                self._agent(event)
            case ToolCallStarted():
                self._tool_started(event)
            case PermissionRequested():
                if (tool := self._tools.get(event.call_id)) is not None:
                    tool.asked_at = time.monotonic()
                    tool.span.set_attribute("loom.permission.reason", event.reason)
            case PermissionAnswered():
                self._answered(event)
            case ToolFinished():
                self._tool_finished(event)
            case UsageUpdated():
                self._usage(event)
            case Retrying():
                if (chat := self._chats.get(event.agent_id)) is not None:
                    chat.attempts = event.attempt + 1
                    chat.span.add_event("retry", {"loom.retry.reason": event.reason, "loom.retry.kind": event.kind,
                                                  "loom.retry.delay_s": event.delay_s})
            case CompactionApplied():
                if (agent := self._agents.get(event.agent_id)) is not None:
                    agent.span.add_event("compaction", {"loom.tokens_before": event.tokens_before,
                                                        "loom.tokens_after": event.tokens_after,
                                                        "loom.compaction.method": event.method})
            case Finished() | MaxTurnsReached() | BudgetExceeded() | Aborted() | Error():
                self._ended(event)
            case _:
                pass

    @_never_raises(None)
    def prompt_submitted(self, stamp: Mapping[str, Any], prompt: str) -> None:
        self._agent(AgentEvent(**stamp))
        self._signals.event("loom.user_prompt", prompt_length=len(prompt), prompt=self._signals.prompt_text(prompt),
                            **{"loom.agent.id": str(stamp.get("agent_id", ""))})

    @_never_raises(None)
    def request_started(self, stamp: Mapping[str, Any], *, model: str, provider: str) -> None:
        from opentelemetry.trace import SpanKind

        agent = self._agent(AgentEvent(**stamp))
        agent_id = str(stamp.get("agent_id", ""))
        self._close_chat(agent_id, error="superseded")  # never two at once for one agent
        span = self._tracer.start_span(f"chat {model}", context=self._in(agent.span), kind=SpanKind.CLIENT,
                                       attributes={"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                                                   "gen_ai.request.model": model})
        self._chats[agent_id] = _ChatSpan(span, time.monotonic(), model)
        agent.model = model

    @_never_raises(None)
    def request_finished(self, stamp: Mapping[str, Any], *, stop_reason: str) -> None:
        chat = self._chats.pop(str(stamp.get("agent_id", "")), None)
        if chat is None:
            return
        chat.span.set_attribute("gen_ai.response.finish_reasons", [stop_reason])
        usage = chat.usage or Usage()
        self._signals.event("loom.api_request", model=chat.model, input_tokens=usage.input_tokens,
                            output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_input_tokens,
                            cache_creation_tokens=usage.cache_creation_input_tokens, cost_usd=chat.cost_usd,
                            duration_ms=round((time.monotonic() - chat.started) * 1000), attempts=chat.attempts,
                            stop_reason=stop_reason)
        chat.span.end()

    @_never_raises(_NO_VARIABLES)
    def command_env(self, call_id: str) -> Mapping[str, str]:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        tool = self._tools.get(call_id)
        if tool is None:
            return {}
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, context=self._in(tool.span))
        return {key.upper(): value for key, value in carrier.items()}

    @_never_raises(None)
    def close_open(self, why: str) -> None:
        """End every span still open (the process is ending mid-run), marked as errors."""
        for call_id in list(self._tools):
            self._end_tool_span(call_id, error=why)
        for agent_id in list(self._chats):
            self._close_chat(agent_id, error=why)
        for agent_id in list(self._agents):
            self._end_agent(agent_id, error=why)

    # --- spans ---------------------------------------------------------------------------

    @staticmethod
    def _in(span: Span) -> Context:
        from opentelemetry.trace import set_span_in_context

        return set_span_in_context(span)

    def _agent(self, event: AgentEvent) -> _AgentSpan:
        """The agent's span for the run in progress, started at its first event."""
        found = self._agents.get(event.agent_id)
        if found is not None:
            return found
        from opentelemetry.trace import SpanKind

        parent_tool = self._tools.get(event.parent_tool_use_id or "")
        name = (parent_tool.subagent or "general-purpose") if parent_tool is not None else "loom"
        attributes: dict[str, str | int] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                                            "gen_ai.agent.id": event.agent_id, "loom.agent.depth": event.depth}
        if self._session_id:
            attributes["gen_ai.conversation.id"] = self._session_id
        parent = self._in(parent_tool.span) if parent_tool is not None else _caller_context()
        span = self._tracer.start_span(f"invoke_agent {name}", context=parent, kind=SpanKind.INTERNAL,
                                       attributes=attributes)
        made = self._agents[event.agent_id] = _AgentSpan(span, time.monotonic(), name)
        return made

    def _tool_started(self, event: ToolCallStarted) -> None:
        # Outside an agent's run (the user's own `!command`), the call is a trace of its own.
        agent = self._agents.get(event.agent_id)
        tool_type = "extension" if is_mcp_name(event.name) else "function"
        attributes: dict[str, str] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.name,
                                      "gen_ai.tool.call.id": event.call_id, "gen_ai.tool.type": tool_type}
        arguments = self._signals.detail(dict(event.input))
        if arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = arguments
        span = self._tracer.start_span(f"execute_tool {event.name}", attributes=attributes,
                                       context=self._in(agent.span) if agent is not None else _caller_context())
        subagent = None
        if event.name == TASK_TOOL:
            subagent = str(event.input.get("subagent_type") or "general-purpose")
        self._tools[event.call_id] = _ToolSpan(span, event.agent_id, event.name, subagent=subagent,
                                               arguments=arguments)

    def _answered(self, event: PermissionAnswered) -> None:
        tool = self._tools.get(event.call_id)
        if tool is None:
            return
        if tool.asked_at is not None:
            waited = time.monotonic() - tool.asked_at
            tool.waited_s += waited
            self._signals.active.add(waited, self._signals.attributes(type="user"))
        tool.answer = event.decision

    def _tool_finished(self, event: ToolFinished) -> None:
        tool = self._tools.get(event.call_id)
        if tool is None:
            return
        if tool.answer is not None:  # the user was asked
            decision = "reject" if tool.answer == "deny" else "accept"
            source = ANSWER_SOURCES.get(tool.answer, "user_temporary")
        else:  # a rule, the mode, a hook or a headless run's policy decided without asking
            decision, source = ("reject", "config") if event.denied else ("accept", "config")
        span = tool.span
        span.set_attribute("loom.tool.decision", decision)
        span.set_attribute("loom.tool.decision_source", source)
        if tool.answer is not None:
            span.set_attribute("loom.tool.user_answer", tool.answer)
            span.set_attribute("loom.tool.user_wait_ms", round(tool.waited_s * 1000, 1))
        span.set_attribute("loom.tool.duration_ms", round(event.duration_ms, 1))
        span.set_attribute("loom.tool.success", not event.is_error)
        result = self._signals.detail(event.content)
        if result is not None:
            span.set_attribute("gen_ai.tool.call.result", result)
        attributes = {"tool_name": event.name, "decision": decision, "source": source}
        self._signals.decisions.add(1, self._signals.attributes(**attributes))
        self._signals.event("loom.tool_decision", **attributes)
        self._signals.event("loom.tool_result", tool_name=event.name, success=not event.is_error,
                            duration_ms=round(event.duration_ms, 1), decision=decision, source=source,
                            tool_parameters=tool.arguments,
                            tool_result=result)
        self._signals.count_diff(event.display, event.name)
        self._end_tool_span(event.call_id, error="denied" if event.denied else "tool_error" if event.is_error else None)

    def _usage(self, event: UsageUpdated) -> None:
        chat, agent = self._chats.get(event.agent_id), self._agents.get(event.agent_id)
        model = chat.model if chat is not None else agent.model if agent is not None else ""
        self._signals.count_usage(event.usage, event.cost_usd, model)
        if chat is None:
            return
        usage = event.usage
        chat.usage, chat.cost_usd = usage, event.cost_usd
        chat.span.set_attributes({
            "gen_ai.usage.input_tokens": usage.prompt_tokens,  # cached ones included, as the conventions say
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
            "loom.cost_usd": event.cost_usd})

    def _ended(self, event: AgentEvent) -> None:
        """A terminal event: the agent's run, and whatever of it is still open, ends."""
        error: str | None = None
        if isinstance(event, Error):
            error = event.kind
            if (chat := self._chats.get(event.agent_id)) is not None:
                self._signals.event("loom.api_error", model=chat.model, error=event.message, kind=event.kind,
                                    attempts=chat.attempts,
                                    duration_ms=round((time.monotonic() - chat.started) * 1000))
        elif isinstance(event, Aborted):
            error = "aborted"
        for call_id, tool in list(self._tools.items()):
            if tool.agent_id == event.agent_id:
                self._end_tool_span(call_id, error=error or "unfinished")
        self._close_chat(event.agent_id, error=error or "unfinished")
        agent = self._agents.get(event.agent_id)
        if agent is None:
            return
        if isinstance(event, Finished):
            usage = event.usage
            agent.span.set_attributes({"gen_ai.usage.input_tokens": usage.prompt_tokens,
                                       "gen_ai.usage.output_tokens": usage.output_tokens,
                                       "loom.cost_usd": event.cost_usd, "loom.num_turns": event.num_turns,
                                       "gen_ai.response.finish_reasons": [event.stop_reason]})
        elif not isinstance(event, (Error, Aborted)):
            agent.span.set_attribute("loom.stop_reason", event.type)
        self._end_agent(event.agent_id, error=error)

    def _close_chat(self, agent_id: str, *, error: str) -> None:
        chat = self._chats.pop(agent_id, None)
        if chat is not None:
            _fail(chat.span, error)
            chat.span.end()

    def _end_tool_span(self, call_id: str, *, error: str | None) -> None:
        tool = self._tools.pop(call_id, None)
        if tool is not None:
            if error is not None:
                _fail(tool.span, error)
            tool.span.end()

    def _end_agent(self, agent_id: str, *, error: str | None) -> None:
        agent = self._agents.pop(agent_id, None)
        if agent is None:
            return
        if error is not None:
            _fail(agent.span, error)
        self._signals.active.add(time.monotonic() - agent.started, self._signals.attributes(type="cli"))
        agent.span.end()


def _fail(span: Span, error_type: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))


def _caller_context() -> Context | None:
    """The trace Loom itself runs in, when its caller passed one (``TRACEPARENT``)."""
    traceparent = os.environ.get("TRACEPARENT")
    if not traceparent:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent})
