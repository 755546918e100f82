"""RunContext: what one turn needs, wired from an Agent for the length of one run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .events import AgentEvent
from .execution import CancelToken, ExecutionContext
from .messages import Message, ToolResultPart, ToolUsePart
from .providers.base import ProviderRequest
from .tools.pipeline import ToolPipeline
from .tools.scheduler import Scheduler
from .usage import Usage

# A diff bigger than this (a whole generated file, say) is shown live but not saved.
MAX_SAVED_DISPLAY_CHARS = 100_000

if TYPE_CHECKING:
    from .agent import Agent
    from .turn import TurnState


@dataclass
class Scratch:
    """What is in flight inside a turn, so an abort can keep what was already done."""

    text: list[str] = field(default_factory=list)
    streaming: bool = False
    completed_results: dict[str, ToolResultPart] = field(default_factory=dict)
    # The UI's rendering hints (diffs) of this turn's calls, kept with the results so a
    # resumed session can show them again.
    displays: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    running_tools: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    last_call_signature: str = ""
    repeat_count: int = 0

    def start_stream(self) -> None:
        self.text.clear()
        self.streaming = True


class RunContext:
    def __init__(self, agent: Agent, emit: Callable[[AgentEvent], None], cancel: CancelToken,
                 first_turn: int) -> None:
        self.agent = agent
        self.config = agent.config
        self.bus = agent.bus
        self.metrics = agent.metrics
        # Shared by every turn of the run (and handed to sub-agents as their parent's).
        self.execution = ExecutionContext(workspace=agent.workspace.root, cancel=cancel)
        self.first_turn = first_turn
        self.emit = emit
        self.scratch = Scratch()
        self.state: TurnState | None = None
        self.scheduler = Scheduler(self.config.max_parallel_tools)
        self.pipeline = ToolPipeline(
            registry=agent.registry, bus=agent.bus, metrics=agent.metrics,
            make_context=agent._tool_context_factory(cancel, emit), emit=emit, stamp=self.stamp,
            permissions=agent.permissions, interactive=self.config.interactive,
            redact=self.config.redact_secrets, timeout_s=self.config.tool_timeout_s)

    @property
    def cancel(self) -> CancelToken:
        return self.execution.cancel

    def stamp(self) -> Mapping[str, Any]:
        return self.agent._stamp(self.state.turn_id if self.state else "")

    # --- transcript --------------------------------------------------------------------

    def commit(self, message: Message) -> None:
        self.agent._append(message)

    def end_turn(self, state: TurnState) -> None:
        self.agent._save_turn_state(state)

    # --- model -------------------------------------------------------------------------

    def build_request(self) -> ProviderRequest:
        return self.agent._build_request()

    def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        return self.agent._stream(request, self.cancel)

    def cost_of(self, usage: Usage) -> float:
        return self.agent._cost_of(usage)

    def observe_usage(self, usage: Usage) -> None:
        self.agent._observe_usage(usage)

    def context_usage(self) -> tuple[int, int]:
        return self.agent.context_usage()

    async def maybe_compact(self, force: bool = False, reason: str = "auto") -> bool:
        return await self.agent._maybe_compact(self, force=force, reason=reason)

    # --- tools -------------------------------------------------------------------------

    async def run_tool(self, call: ToolUsePart) -> ToolResultPart:
        self.scratch.running_tools[call.id] = call.name
        try:
            outcome = await self.pipeline.run(call)
        finally:
            self.scratch.running_tools.pop(call.id, None)
        result = outcome.result
        self.scratch.completed_results[call.id] = result
        if outcome.display is not None and len(repr(outcome.display)) <= MAX_SAVED_DISPLAY_CHARS:
            self.scratch.displays[call.id] = outcome.display
        return result
