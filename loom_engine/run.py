"""Run: what the turns of one ``Agent.run`` share.

It holds small typed pieces — the transcript, the model client, the tool pipeline and
scheduler, the metrics, the bus — and the scratch of the turn in flight, so that an
abort can keep what was already done. None of them knows about :class:`Agent`; the
turn function reads top to bottom against them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .bus import EventBus
from .checkpoints import Checkpoints, snapshot_after
from .config import AgentConfig
from .context.compaction import compact_history
from .events import AgentEvent
from .execution import CancelToken
from .hooks.config import HookEventName
from .hooks.engine import HookEngine, hook_context_message
from .hooks.outcome import HookVerdict
from .messages import ImagePart, ToolResultPart, ToolUsePart
from .metrics import RunMetrics
from .model_client import ModelClient
from .tools.base import ToolContext
from .tools.pipeline import ToolPipeline
from .tools.scheduler import Scheduler
from .tools.tool_block import ToolBlock
from .transcript import Transcript
from .turn_state import TurnState

if TYPE_CHECKING:
    from .permissions.manager import PermissionManager
    from .tool_contexts import ToolContextFactory

# A diff bigger than this (a whole generated file, say) is shown live but not saved.
MAX_SAVED_DISPLAY_CHARS = 100_000


@dataclass(frozen=True)
class AgentIdentity:
    """Who produces a run's events: every event carries these, so a UI can draw the tree."""

    agent_id: str
    parent_tool_use_id: str | None = None
    depth: int = 0

    @classmethod
    def new(cls, depth: int = 0, parent_tool_use_id: str | None = None) -> AgentIdentity:
        """A fresh agent id (a child's names the parent's call it runs for)."""
        return cls("agent_" + uuid.uuid4().hex[:8], parent_tool_use_id, depth)


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
    # Images tool calls returned (an MCP tool's), sent after the turn's results.
    images: dict[str, tuple[ImagePart, ...]] = field(default_factory=dict)
    last_call_signature: str = ""
    repeat_count: int = 0

    def start_stream(self) -> None:
        self.text.clear()
        self.streaming = True

    def end_turn(self) -> None:
        self.completed_results.clear()
        self.displays.clear()
        self.images.clear()


class Run:
    def __init__(self, *, config: AgentConfig, identity: AgentIdentity, transcript: Transcript,
                 client: ModelClient, tools: ToolBlock, permissions: PermissionManager | None,
                 bus: EventBus, metrics: RunMetrics, emit: Callable[[AgentEvent], None],
                 cancel: CancelToken, state: TurnState, tool_contexts: ToolContextFactory,
                 checkpoints: Checkpoints | None = None, hooks: HookEngine | None = None) -> None:
        self.config = config
        self.checkpoints = checkpoints
        self.identity = identity
        self.transcript = transcript
        self.client = client
        self.bus = bus
        self.metrics = metrics
        self.emit = emit
        self.cancel = cancel
        self.state = state
        self.first_turn = state.turn
        self._tools = tools
        self._tool_contexts = tool_contexts
        self.scratch = Scratch()
        self.hooks = hooks if hooks else None
        # Stop hooks that blocked the end of this run in a row (they may do so 8 times).
        self.stop_blocks = 0
        self.scheduler = Scheduler(config.max_parallel_tools)
        self._take_up_tools()
        self.pipeline = ToolPipeline(
            registry=tools.registry, bus=bus, metrics=metrics,
            make_context=self.tool_context, emit=emit, stamp=self.stamp,
            permissions=permissions, interactive=config.interactive, redact=config.redact_secrets,
            redactor=config.redactor, timeout_s=config.tool_timeout_s, hooks=self.hooks)

    def stamp(self) -> Mapping[str, Any]:
        """The ids every event of this run carries."""
        return {"turn_id": self.state.turn_id, "agent_id": self.identity.agent_id,
                "parent_tool_use_id": self.identity.parent_tool_use_id,
                "parent_turn_id": self.state.parent_turn_id, "depth": self.identity.depth}

    def refresh_tools(self) -> None:
        """At a turn boundary: take up tools that joined or left since the last request."""
        self._take_up_tools()
        self.pipeline.registry = self._tools.registry

    def _take_up_tools(self) -> None:
        if self._tools.refresh():
            self.client.set_tools(self._tools.specs)

    def tool_context(self, call_id: str) -> ToolContext:
        """The context tool call ``call_id`` of this run runs with."""
        return self._tool_contexts.make(call_id, cancel=self.cancel, emit=self.emit, stamp=self.stamp)

    async def compact(self, *, force: bool = False, reason: str = "auto", focus: str | None = None) -> bool:
        compacted = await compact_history(self.transcript, self.client, self.metrics, cancel=self.cancel,
                                          emit=self.emit, stamp=self.stamp, force=force, reason=reason,
                                          focus=focus, hooks=self.fire_hooks if self.hooks else None)
        if compacted and reason != "manual" and self.hooks is not None and self.identity.depth == 0:
            # As in Claude Code: SessionStart hooks (source "compact") may give back what
            # the summary lost, before the request that follows. (/compact: the Agent does it.)
            verdict = await self.fire_hooks("SessionStart", {"source": "compact"}, names=("compact",))
            if verdict.context:
                self.transcript.append(hook_context_message([f"SessionStart hook (compact):\n{verdict.context}"]))
        return compacted

    async def fire_hooks(self, event: HookEventName, fields: Mapping[str, Any], *,
                         names: tuple[str, ...] = ()) -> HookVerdict:
        """Run the user's hooks for ``event`` (none: an empty verdict at once)."""
        if self.hooks is None:
            return HookVerdict()
        return await self.hooks.fire(event, fields, names=names, cancel=self.cancel, emit=self.emit,
                                     stamp=self.stamp)

    async def run_tool(self, call: ToolUsePart) -> ToolResultPart:
        self.scratch.running_tools[call.id] = call.name
        tool = self.pipeline.registry.get(call.name)
        snapshot = self.checkpoints is not None and \
            snapshot_after(call.name, tool.is_read_only if tool is not None else True)
        try:
            if snapshot and self.checkpoints is not None:
                await self.checkpoints.before_tool(call.name, call.input)
            outcome = await self.pipeline.run(call)
        finally:
            self.scratch.running_tools.pop(call.id, None)
        if snapshot and self.checkpoints is not None:
            await self.checkpoints.after_tool(call.name, call.input)
        result = outcome.result
        self.scratch.completed_results[call.id] = result
        if outcome.images:
            self.scratch.images[call.id] = outcome.images
        if outcome.display is not None and len(repr(outcome.display)) <= MAX_SAVED_DISPLAY_CHARS:
            self.scratch.displays[call.id] = outcome.display
        return result

    def close_interrupted(self, reason: str, *, keep_partial: bool = True) -> tuple[str, str]:
        """Make the transcript valid after an abort or crash mid-turn; returns the partial
        text that was streaming (kept unless ``keep_partial`` is False: after a crash) and
        what was cut off, in words."""
        self.scratch.streaming = self.scratch.streaming and keep_partial
        partial = "".join(self.scratch.text) if self.scratch.streaming else ""
        what = self.transcript.close_interrupted_turn(
            partial_text=partial, completed=self.scratch.completed_results,
            running=dict(self.scratch.running_tools), reason=reason)
        return partial, what
