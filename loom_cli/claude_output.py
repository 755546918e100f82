"""`loom run -o json` and `-o stream-json` in Claude Code's shapes, so scripts written
around `claude -p` read Loom's output unchanged.

stream-json is one JSON object a line: a ``system``/``init`` message first, then an
``assistant`` message for each of the model's answers and a ``user`` message for each
tool result (a sub-agent's carry ``parent_tool_use_id``), and the ``result`` object last;
``-o json`` prints only that result object. The keys and their types are Claude Code's
(recorded from `claude -p` 2.1 in tests/cli/fixtures/claude_code/); Loom adds a few keys
of its own (``stop_reason`` in Loom's words, ``metrics``, ``sandbox``, ``context_window``,
a usage limit's ``resets_at``), which a JSON reader passes over. Loom's own, finer event
stream is ``-o loom-stream-json``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.events import (
    Aborted,
    AgentEvent,
    AssistantMessage,
    BudgetExceeded,
    Error,
    Finished,
    MaxTurnsReached,
    ToolCallStarted,
    ToolFinished,
    TurnStarted,
    UsageUpdated,
)
from loom_engine.messages import Message, TextPart, ThinkingPart, ToolUsePart
from loom_engine.usage import Usage

if TYPE_CHECKING:
    from .chat_agent import ChatAgent
    from .stop_reason import StopEvent

# How a run ended, as Claude Code's result ``subtype`` says it.
SUBTYPES: dict[type[AgentEvent], str] = {
    Finished: "success", MaxTurnsReached: "error_max_turns", BudgetExceeded: "error_max_budget_usd",
    Aborted: "error_during_execution", Error: "error_during_execution",
}


def usage_json(usage: Usage) -> dict[str, int]:
    """Anthropic's usage keys (what Claude Code prints), and Loom's reasoning tokens."""
    return {"input_tokens": usage.input_tokens, "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens, "output_tokens": usage.output_tokens,
            "reasoning_tokens": usage.reasoning_tokens}


def _content(message: Message) -> list[dict[str, Any]]:
    """An assistant message's parts as the Messages API's content blocks."""
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolUsePart):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.input)})
        elif isinstance(part, ThinkingPart):
            if part.redacted_data is not None:
                blocks.append({"type": "redacted_thinking", "data": part.redacted_data})
            else:
                blocks.append({"type": "thinking", "thinking": part.thinking, "signature": part.signature or ""})
    return blocks


@dataclass(frozen=True)
class RunFacts:
    """What the ``init`` message says of the run."""

    session_id: str
    model: str
    cwd: str
    tools: tuple[str, ...]
    mcp_servers: tuple[tuple[str, str], ...]  # (name, state)
    permission_mode: str
    skills: tuple[str, ...]
    slash_commands: tuple[str, ...]
    # Loom's own: the sandbox's state and the context window.
    extra: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """How the run ended, already worded (headless decides it for every format)."""

    final: Finished | StopEvent | None
    result: str
    is_error: bool
    why: str  # Loom's stop reason: end_turn, max_tokens, max_turns, interrupted, usage_limit...
    num_turns: int
    usage: Usage
    cost_usd: float
    extra: Mapping[str, object] = field(default_factory=dict)


class ClaudeTranscript:
    """Follows one run's events: Claude Code's messages for each, and what its result
    object needs (the denied calls, the time spent waiting for the model)."""

    def __init__(self, session_id: str, model: str) -> None:
        self.session_id = session_id
        self.model = model
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> (tool, input)
        self._usage: dict[str, Usage] = {}  # the agent's last request's usage
        self._asked_at: float | None = None
        self.api_ms = 0.0
        self.denials: list[dict[str, Any]] = []

    def init(self, facts: RunFacts) -> dict[str, Any]:
        return {"type": "system", "subtype": "init", "cwd": facts.cwd, "session_id": facts.session_id,
                "tools": list(facts.tools),
                "mcp_servers": [{"name": name, "status": state} for name, state in facts.mcp_servers],
                "model": facts.model, "permissionMode": facts.permission_mode,
                "slash_commands": list(facts.slash_commands), "skills": list(facts.skills),
                "uuid": str(uuid.uuid4()), **facts.extra}

    def messages(self, event: AgentEvent) -> list[dict[str, Any]]:
        """Claude Code's messages for ``event`` (most events have none)."""
        if isinstance(event, TurnStarted) and event.depth == 0:
            self._asked_at = time.monotonic()
        elif isinstance(event, UsageUpdated):
            self._usage[event.agent_id] = event.usage
        elif isinstance(event, ToolCallStarted):
            self._calls[event.call_id] = (event.name, dict(event.input))
        elif isinstance(event, AssistantMessage):
            if event.depth == 0 and self._asked_at is not None:
                self.api_ms += (time.monotonic() - self._asked_at) * 1000
                self._asked_at = None
            usage = self._usage.get(event.agent_id, Usage())
            message = {"id": event.message.id, "type": "message", "role": "assistant", "model": self.model,
                       "content": _content(event.message), "stop_reason": None, "stop_sequence": None,
                       "usage": usage_json(usage)}
            return [self._envelope("assistant", message, event)]
        elif isinstance(event, ToolFinished):
            name, arguments = self._calls.pop(event.call_id, (event.name, {}))
            if event.denied:
                self.denials.append({"tool_name": name, "tool_use_id": event.call_id, "tool_input": arguments})
            block: dict[str, Any] = {"tool_use_id": event.call_id, "type": "tool_result", "content": event.content}
            if event.is_error:
                block["is_error"] = True
            line = self._envelope("user", {"role": "user", "content": [block]}, event)
            line["timestamp"] = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            line["tool_use_result"] = event.content
            return [line]
        return []

    def _envelope(self, kind: str, message: dict[str, Any], event: AgentEvent) -> dict[str, Any]:
        return {"type": kind, "message": message, "parent_tool_use_id": event.parent_tool_use_id,
                "session_id": self.session_id, "uuid": str(uuid.uuid4())}

    def result(self, outcome: Outcome, duration_ms: int) -> dict[str, Any]:
        final = outcome.final
        subtype = SUBTYPES.get(type(final), "error_during_execution") if final is not None else \
            "error_during_execution"
        line: dict[str, Any] = {
            "type": "result", "subtype": subtype, "is_error": outcome.is_error, "duration_ms": duration_ms,
            "duration_api_ms": int(self.api_ms), "num_turns": outcome.num_turns, "result": outcome.result,
            "stop_reason": outcome.why, "session_id": self.session_id,
            "total_cost_usd": round(outcome.cost_usd, 6), "usage": usage_json(outcome.usage),
            "permission_denials": list(self.denials),
            "terminal_reason": "completed" if isinstance(final, Finished) else outcome.why,
            "uuid": str(uuid.uuid4()),
        }
        if outcome.is_error:
            line["errors"] = [outcome.result]
        line.update(outcome.extra)
        return line


def run_facts(agent: ChatAgent, extra: Mapping[str, object]) -> RunFacts:
    """The ``init`` message's facts of ``agent``'s run (MCP servers as they are now: the
    run has waited for them)."""
    from loom_engine.mcp.names import tool_name
    from loom_engine.permissions.modes import CLAUDE_MODE_NAMES

    from .slash_commands import discover_commands
    from .tui.commands.registry import BUILTIN_NAMES

    mcp = agent.mcp
    statuses = mcp.statuses() if mcp is not None else ()
    mcp_tools = tuple(tool_name(info.server, info.name) for info in mcp.tools()) if mcp is not None else ()
    permissions = agent.permissions
    mode = CLAUDE_MODE_NAMES[permissions.mode] if permissions is not None else "bypassPermissions"
    skills = tuple(skill.name for skill in agent.skills) if agent.skills is not None else ()
    commands = tuple(command.name for command in discover_commands(Path(agent.workspace.root), BUILTIN_NAMES))
    return RunFacts(session_id=agent.session_id or "", model=agent.config.model, cwd=str(Path.cwd()),
                    tools=(*agent.registry.names, *mcp_tools),
                    mcp_servers=tuple((status.name, status.state) for status in statuses),
                    permission_mode=mode, skills=skills, slash_commands=(*commands, *skills), extra=extra)
