"""Run: what the turns of one ``Agent.run`` share.

Its dependencies (:class:`RunDeps`: the transcript, the model client, the tools, the
metrics, the bus...) are fixed for the run; its state (:class:`RunState`: the turn in
progress, what is in flight inside it, so that an abort can keep what was already done)
changes as it goes. Neither knows about :class:`Agent`; the turn function reads top to
bottom against them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .bus import EventBus
from .checkpoints import Checkpoints, snapshot_after
from .config import AgentConfig
from .context.compaction import BeforeCompaction, compact_history
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
    from .context.instructions import PathRules
    from .permissions.manager import PermissionManager
    from .telemetry.observer import RunObserver
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
class InFlight:
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
    # The request being answered: its output limit, and whether the window lowered it
    # below the max_tokens setting (what a cut-off answer is then blamed on).
    output_limit: int = 0
    output_limited_by_window: bool = False

    def start_stream(self) -> None:
        self.text.clear()
        self.streaming = True

    def end_turn(self) -> None:
        self.completed_results.clear()
        self.displays.clear()
        self.images.clear()


@dataclass(frozen=True)
class RunDeps:
    """What the turns of a run work with: the agent's, the same from the first turn to the last."""

    config: AgentConfig
    identity: AgentIdentity
    transcript: Transcript
    client: ModelClient
    tools: ToolBlock
    tool_contexts: ToolContextFactory
    bus: EventBus
    metrics: RunMetrics
    permissions: PermissionManager | None = None  # None allows everything
    checkpoints: Checkpoints | None = None
    hooks: HookEngine | None = None  # the user's hook commands; None: none
    # The .claude/rules files with ``paths:``, given to the model with the tool result
    # that first touches a file they cover; None: none.
    path_rules: PathRules | None = None
    # Sees each event as it is emitted, and the facts events do not carry (telemetry); None: none.
    observer: RunObserver | None = None
    # Reads the history before a compaction summarises it (the top agent's only); None: nothing does.
    before_compaction: BeforeCompaction | None = None


@dataclass
class RunState:
    """What changes as a run goes."""

    turn_state: TurnState  # the turn in progress (set by the loop at each turn)
    first_turn: int  # the turn the run started at, for its turn limit
    inflight: InFlight = field(default_factory=InFlight)
    # Stop hooks that blocked the end of this run in a row (they may do so 8 times).
    stop_blocks: int = 0
    # Set when a hook answered "continue": false: the run stops after this batch of calls.
    hook_stop: str | None = None


class Run:
    def __init__(self, deps: RunDeps, turn_state: TurnState, *, emit: Callable[[AgentEvent], None],
                 cancel: CancelToken) -> None:
        self.deps = deps
        self.state = RunState(turn_state, first_turn=turn_state.turn)
        self.emit = emit if deps.observer is None else _observed(emit, deps.observer, deps.identity.agent_id)
        self.cancel = cancel
        self.scheduler = Scheduler(deps.config.max_parallel_tools)
        self._take_up_tools()
        config = deps.config
        self.pipeline = ToolPipeline(
            registry=deps.tools.registry, bus=deps.bus, metrics=deps.metrics,
            make_context=self.tool_context, emit=self.emit, stamp=self.stamp,
            permissions=deps.permissions, interactive=config.interactive, redact=config.redact_secrets,
            redactor=config.redactor, timeout_s=config.tool_timeout_s, hooks=deps.hooks)

    def stamp(self) -> Mapping[str, Any]:
        """The ids every event of this run carries."""
        state, identity = self.state.turn_state, self.deps.identity
        return {"turn_id": state.turn_id, "agent_id": identity.agent_id,
                "parent_tool_use_id": identity.parent_tool_use_id,
                "parent_turn_id": state.parent_turn_id, "depth": identity.depth}

    def begin_turn(self, turn_state: TurnState) -> None:
        """The loop starts a turn: its events carry its id from now on."""
        self.state.turn_state = turn_state

    def refresh_tools(self) -> None:
        """At a turn boundary: take up tools that joined or left since the last request."""
        self._take_up_tools()
        self.pipeline.registry = self.deps.tools.registry

    def _take_up_tools(self) -> None:
        if self.deps.tools.refresh():
            self.deps.client.set_tools(self.deps.tools.specs)

    def tool_context(self, call_id: str) -> ToolContext:
        """The context tool call ``call_id`` of this run runs with."""
        observer = self.deps.observer
        return self.deps.tool_contexts.make(call_id, cancel=self.cancel, emit=self.emit, stamp=self.stamp,
                                            command_env=observer.command_env(call_id) if observer else {})

    def prompt_submitted(self, prompt: str) -> None:
        if self.deps.observer is not None:
            self.deps.observer.prompt_submitted(self.stamp(), prompt)

    def request_started(self) -> None:
        if self.deps.observer is not None:
            config = self.deps.client.config
            self.deps.observer.request_started(self.stamp(), model=config.model, provider=config.provider)

    def request_finished(self, stop_reason: str) -> None:
        if self.deps.observer is not None:
            self.deps.observer.request_finished(self.stamp(), stop_reason=stop_reason)

    async def compact(self, *, force: bool = False, reason: str = "auto", focus: str | None = None) -> bool:
        deps = self.deps
        compacted = await compact_history(deps.transcript, deps.client, deps.metrics, cancel=self.cancel,
                                          emit=self.emit, stamp=self.stamp, force=force, reason=reason,
                                          focus=focus, hooks=self.fire_hooks if deps.hooks else None,
                                          before=deps.before_compaction if deps.identity.depth == 0 else None)
        if compacted and reason != "manual" and deps.hooks is not None and deps.identity.depth == 0:
            # As in Claude Code: SessionStart hooks (source "compact") may give back what
            # the summary lost, before the request that follows. (/compact: the Agent does it.)
            verdict = await self.fire_hooks("SessionStart", {"source": "compact"}, names=("compact",))
            if verdict.context:
                deps.transcript.append(hook_context_message([f"SessionStart hook (compact):\n{verdict.context}"]))
        return compacted

    async def fire_hooks(self, event: HookEventName, fields: Mapping[str, Any], *,
                         names: tuple[str, ...] = ()) -> HookVerdict:
        """Run the user's hooks for ``event`` (none: an empty verdict at once)."""
        if self.deps.hooks is None:
            return HookVerdict()
        return await self.deps.hooks.fire(event, fields, names=names, cancel=self.cancel, emit=self.emit,
                                     stamp=self.stamp)

    async def run_tool(self, call: ToolUsePart) -> ToolResultPart:
        inflight, checkpoints = self.state.inflight, self.deps.checkpoints
        inflight.running_tools[call.id] = call.name
        tool = self.pipeline.registry.get(call.name)
        read_only = tool.is_read_only if tool is not None else True
        snapshot = checkpoints is not None and snapshot_after(call.name, read_only)
        try:
            if snapshot and checkpoints is not None:
                await checkpoints.before_tool(call.name, call.input)
            outcome = await self.pipeline.run(call)
        finally:
            inflight.running_tools.pop(call.id, None)
        if snapshot and checkpoints is not None:
            await checkpoints.after_tool(call.name, call.input)
        result = outcome.result
        inflight.completed_results[call.id] = result
        if outcome.images:
            inflight.images[call.id] = outcome.images
        if outcome.display is not None and len(repr(outcome.display)) <= MAX_SAVED_DISPLAY_CHARS:
            inflight.displays[call.id] = outcome.display
        self.state.hook_stop = self.state.hook_stop or outcome.stop_reason
        return result

    def close_interrupted(self, reason: str, *, keep_partial: bool = True) -> tuple[str, str]:
        """Make the transcript valid after an abort or crash mid-turn; returns the partial
        text that was streaming (kept unless ``keep_partial`` is False: after a crash) and
        what was cut off, in words."""
        inflight = self.state.inflight
        inflight.streaming = inflight.streaming and keep_partial
        partial = "".join(inflight.text) if inflight.streaming else ""
        what = self.deps.transcript.close_interrupted_turn(
            partial_text=partial, completed=inflight.completed_results,
            running=dict(inflight.running_tools), reason=reason, refused=self.cancel.refused)
        return partial, what


def _observed(emit: Callable[[AgentEvent], None], observer: RunObserver, agent_id: str
              ) -> Callable[[AgentEvent], None]:
    """``emit`` that shows the observer this agent's own events first (a sub-agent's,
    forwarded through it, were shown by the sub-agent's run)."""

    def emit_observed(event: AgentEvent) -> None:
        if event.agent_id == agent_id:
            observer.observe(event)
        emit(event)

    return emit_observed
