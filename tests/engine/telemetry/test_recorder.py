"""The recorder on a real agent run (in-process, in-memory exporters): a sub-agent's span
under the task call that started it, permission answers and the time they waited,
TRACEPARENT in a command's environment, and an abort that still ends every span."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.context.prompts import SUBAGENT_INSTRUCTIONS
from loom_engine.events import Aborted, Finished, PermissionRequested, TurnStarted
from loom_engine.messages import Message, TextPart, ToolUsePart
from loom_engine.parts import AgentParts
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.base import ProviderRequest, StreamCompleted, StreamText
from loom_engine.redact import Redactor
from loom_engine.telemetry.settings import TelemetrySettings
from loom_engine.telemetry.setup import Telemetry
from loom_engine.usage import Usage
from loom_engine.workspace import Workspace


class Exported:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        self.metrics = InMemoryMetricReader()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.telemetry = Telemetry(TelemetrySettings(enabled=True), tracer_provider,
                                   MeterProvider(metric_readers=[self.metrics]), logger_provider, "test")

    def by_name(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def metric_points(self, name: str) -> list[tuple[dict[str, Any], float]]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [(dict(p.attributes or {}), p.value) for rm in data.resource_metrics for sm in rm.scope_metrics
                for m in sm.metrics if m.name == name for p in m.data.data_points]  # type: ignore[union-attr]


class TaskThenTwoCommands:
    """The parent starts a sub-agent, then runs two commands that are asked about."""

    name = "anthropic"

    def __init__(self) -> None:
        self.parent_requests = 0

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        if request.system == SUBAGENT_INSTRUCTIONS:
            yield StreamText("the child looked")
            yield StreamCompleted(Message.assistant(TextPart("the child looked")), "end_turn", Usage(50, 5))
            return
        self.parent_requests += 1
        if self.parent_requests == 1:
            task = ToolUsePart("t1", "task", {"description": "look around", "prompt": "look"})
            yield StreamCompleted(Message.assistant(task), "tool_use", Usage(100, 10, cache_read_input_tokens=30))
        elif self.parent_requests == 2:
            calls = (ToolUsePart("b1", "bash", {"command": "printenv TRACEPARENT > traceparent.txt"}),
                     ToolUsePart("b2", "bash", {"command": "touch refused.txt"}))
            yield StreamCompleted(Message.assistant(*calls), "tool_use", Usage(120, 20))
        elif self.parent_requests == 3:
            write = ToolUsePart("w1", "write_file", {"path": "new.txt", "content": "one\ntwo\n"})
            yield StreamCompleted(Message.assistant(write), "tool_use", Usage(130, 20))
        else:
            yield StreamCompleted(Message.assistant(TextPart("all done")), "end_turn", Usage(140, 5))


def _agent(tmp_path: Path, provider: Any, exported: Exported) -> Agent:
    workspace = Workspace.at(tmp_path)
    recorder = exported.telemetry.recorder(session_id="s-1", redactor=Redactor())
    return Agent(AgentConfig(model="claude-sonnet-4-6", provider="anthropic"),
                 AgentParts(provider=provider, tools=default_tools(), workspace=workspace,
                            permissions=PermissionManager(workspace), observer=recorder),
                 system_prompt="parent")


async def test_sub_agents_permission_answers_and_traceparent(tmp_path: Path) -> None:
    exported = Exported()
    agent = _agent(tmp_path, TaskThenTwoCommands(), exported)
    answers = iter([PermissionAnswer("allow_once"), PermissionAnswer("deny"), PermissionAnswer("allow_session")])
    events = []
    async for event in agent.run("go"):
        events.append(event)
        if isinstance(event, PermissionRequested):
            agent.answer_permission(event.request_id, next(answers))
    assert isinstance(events[-1], Finished) and events[-1].result == "all done"

    (root,) = exported.by_name("invoke_agent loom")
    (task,) = exported.by_name("execute_tool task")
    (child,) = exported.by_name("invoke_agent general-purpose")
    allowed, refused = sorted(exported.by_name("execute_tool bash"), key=lambda s: s.start_time or 0)
    assert root.parent is None and root.attributes is not None
    assert root.attributes["gen_ai.conversation.id"] == "s-1"
    assert task.parent is not None and task.parent.span_id == root.context.span_id
    assert child.parent is not None and child.parent.span_id == task.context.span_id
    assert child.context.trace_id == root.context.trace_id and child.attributes is not None
    assert child.attributes["loom.agent.depth"] == 1
    child_chats = [s for s in exported.by_name("chat claude-sonnet-4-6")
                   if s.parent is not None and s.parent.span_id == child.context.span_id]
    assert len(child_chats) == 1 and len(exported.by_name("chat claude-sonnet-4-6")) == 5

    assert allowed.attributes is not None and refused.attributes is not None
    assert allowed.attributes["loom.tool.decision"] == "accept"
    assert allowed.attributes["loom.tool.decision_source"] == "user_temporary"
    assert allowed.attributes["loom.tool.user_answer"] == "allow_once"
    assert allowed.attributes["loom.tool.user_wait_ms"] >= 0
    assert refused.attributes["loom.tool.decision"] == "reject"
    assert refused.attributes["loom.tool.decision_source"] == "user_reject"
    assert refused.attributes["error.type"] == "denied"
    span_id = format(allowed.context.span_id, "016x")
    trace_id = format(allowed.context.trace_id, "032x")
    assert (tmp_path / "traceparent.txt").read_text().startswith(f"00-{trace_id}-{span_id}-")
    assert not (tmp_path / "refused.txt").exists()

    decisions = exported.metric_points("loom.tool.decision")
    assert ({"session.id": "s-1", "tool_name": "bash", "decision": "reject", "source": "user_reject"}, 1) in decisions
    assert any(attributes["type"] == "user" for attributes, _ in exported.metric_points("loom.active_time.total"))
    names = [record.log_record.event_name for record in exported.logs.get_finished_logs()]
    assert names.count("loom.tool_decision") == 4 and names.count("loom.api_request") == 5
    assert (tmp_path / "new.txt").read_text() == "one\ntwo\n"
    lines = exported.metric_points("loom.lines_of_code.count")
    assert lines == [({"session.id": "s-1", "type": "added", "tool_name": "write_file"}, 2)]


class NeverAnswers:
    name = "anthropic"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        await asyncio.Event().wait()
        yield StreamText("never")


async def test_an_aborted_run_ends_its_spans_as_errors(tmp_path: Path) -> None:
    exported = Exported()
    agent = _agent(tmp_path, NeverAnswers(), exported)
    events = []
    async for event in agent.run("go"):
        events.append(event)
        if isinstance(event, TurnStarted):
            agent.abort()
    assert isinstance(events[-1], Aborted)
    (root,) = exported.by_name("invoke_agent loom")
    (chat,) = exported.by_name("chat claude-sonnet-4-6")
    assert root.attributes is not None and chat.attributes is not None
    assert root.attributes["error.type"] == "aborted" and chat.attributes["error.type"] == "aborted"
    assert not root.status.is_ok


async def test_shutdown_ends_what_a_killed_run_left_open(tmp_path: Path) -> None:
    exported = Exported()
    recorder = exported.telemetry.recorder(session_id=None, redactor=Redactor())
    recorder.observe(TurnStarted(turn=1, agent_id="agent_x"))
    recorder.request_started({"agent_id": "agent_x"}, model="m", provider="anthropic")
    exported.telemetry.shutdown()
    assert {s.name for s in exported.spans.get_finished_spans()} == {"invoke_agent loom", "chat m"}


async def test_the_users_own_command_is_a_trace_of_its_own(tmp_path: Path) -> None:
    exported = Exported()
    agent = _agent(tmp_path, NeverAnswers(), exported)
    events = [e async for e in agent.run_user_command("echo $TRACEPARENT")]
    assert events
    (span,) = exported.spans.get_finished_spans()
    assert span.name == "execute_tool bash" and span.parent is None
    assert agent.messages[-1].meta["user_command"]["output"].startswith("00-")  # the command had it
