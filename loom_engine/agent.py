"""Agent: the public face of the engine.

    agent = Agent(config=AgentConfig(model="claude-sonnet-4-5"), provider=provider,
                  tools=default_tools(), workspace=Workspace.at("."))
    async for event in agent.run("fix the failing test"):
        ...

Control goes in through ``agent.bus`` (or the ``abort`` / ``answer_permission``
shortcuts); everything that happens comes out as events.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from .bus import EventBus
from .config import AgentConfig
from .events import AgentEvent, Aborted, CompactionApplied, Error, Notice
from .execution import CancelToken
from .interruption import close_interrupted_turn
from .messages import Message
from .metrics import RunMetrics
from .permissions.answer import PermissionAnswer
from .providers.base import Provider, ProviderRequest
from .run import RunContext
from .tools.base import Tool, ToolContext, ToolOutput, ToolSessionState
from .tools.registry import ToolRegistry
from .turn import TurnState, drive
from .usage import Usage
from .workspace import Workspace

_DONE = object()


class Agent:
    def __init__(self, *, config: AgentConfig, provider: Provider, tools: Sequence[Tool],
                 workspace: Workspace, permissions: Any = None, session: Any = None,
                 messages: Sequence[Message] = (), turn_state: TurnState | None = None,
                 context: Any = None, skills: Any = None, system_prompt: str | None = None,
                 bus: EventBus | None = None, retry_policy: Any = None,
                 agent_id: str | None = None, parent_tool_use_id: str | None = None) -> None:
        self.config = config
        self.provider = provider
        self.workspace = workspace
        self.permissions = permissions
        self.session = session
        # A configuration that names its skills (a sub-agent's) sees only those.
        self.skills = skills if skills is None or config.skill_names is None else skills.restricted(config.skill_names)
        self.context = context
        self.bus = bus or EventBus()
        self.metrics = RunMetrics()
        self.agent_id = agent_id or ("agent_" + uuid.uuid4().hex[:8])
        self.parent_tool_use_id = parent_tool_use_id
        all_tools = ToolRegistry(tools)
        self.registry = all_tools if config.tool_names is None else all_tools.restricted(config.tool_names)
        # Computed once: the tools block and the system prompt stay byte-identical for
        # the whole session so the provider's prompt cache keeps hitting.
        self._tool_specs = self.registry.specs()
        self._system = system_prompt if system_prompt is not None else self._assemble_system_prompt()
        self._retry_policy = retry_policy
        self._messages: list[Message] = list(messages)
        self._state = turn_state or TurnState.initial()
        self._tool_state = ToolSessionState()
        from .context.assembler import ChangingFacts

        self._changing_facts = ChangingFacts(workspace)
        self._running = False
        self._tracker = self._make_tracker()

    # --- public API --------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    @property
    def turn_state(self) -> TurnState:
        return self._state

    @property
    def system_prompt(self) -> str:
        return self._system

    @property
    def session_id(self) -> str | None:
        return getattr(self.session, "id", None)

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def todos(self) -> list[dict[str, Any]]:
        return list(self._tool_state.todos)

    def abort(self, reason: str = "interrupted by user") -> None:
        self.bus.abort(reason)

    async def aclose(self) -> None:
        """Close the provider's connections; call it on the event loop that used them,
        before that loop ends. The agent can run again afterwards (a new client is made)."""
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()

    def answer_permission(self, request_id: str, answer: PermissionAnswer) -> bool:
        return self.bus.respond(request_id, answer)

    def set_model(self, model: str) -> None:
        from dataclasses import replace

        self.config = replace(self.config, model=model)
        self._tracker = self._make_tracker()

    def context_usage(self) -> tuple[int, int]:
        """(tokens the next request would use, the model's context window)."""
        return self._tracker.tokens_in_use(self._messages), self.context_window

    @property
    def context_window(self) -> int:
        if self.config.context_window:
            return self.config.context_window
        from .providers.models import lookup

        return lookup(self.config.model).context_window

    async def run(self, prompt: str, *, cancel: CancelToken | None = None) -> AsyncIterator[AgentEvent]:
        """Add the user's message and run turns until a terminal event.

        ``cancel`` is given for sub-agents (a child of the parent's token); a top-level
        run arms a fresh token on the bus.
        """
        if self._running:
            raise RuntimeError("this agent is already running; wait for the run to end or abort it")
        self._running = True
        if cancel is None:
            self.bus.reset()
            cancel = self.bus.cancel_token
        self._state = self._state.resumed()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        run = RunContext(self, queue.put_nowait, cancel, first_turn=self._state.turn)
        run.state = self._state
        self._append(Message.user(prompt))
        # Facts that changed since the last turn go at the end of the conversation, never
        # into the system prompt, so the cached prefix stays byte-identical.
        reminder = self._changing_facts.collect(self._tool_state)
        if reminder:
            self._append(Message.user(reminder, reminder=True))
        task = asyncio.create_task(self._drive(run, queue))
        watcher = asyncio.create_task(self._cancel_when_aborted(cancel, task))
        try:
            while True:
                event = await queue.get()
                if event is _DONE:
                    break
                yield event
        finally:
            if not task.done():
                cancel.cancel("the event consumer stopped listening")
                await asyncio.gather(task, return_exceptions=True)
            watcher.cancel()
            self._running = False

    async def compact(self, focus: str | None = None) -> AsyncIterator[AgentEvent]:
        """Compact the history now (``/compact``); yields the resulting events."""
        if self._running:
            raise RuntimeError("cannot compact while a run is in progress")
        self.bus.reset()
        events: list[AgentEvent] = []
        run = RunContext(self, events.append, self.bus.cancel_token, first_turn=self._state.turn)
        run.state = self._state
        try:
            await self._maybe_compact(run, force=True, reason="manual", focus=focus)
        except Exception as error:
            events.append(Error(message=f"compaction failed: {error}", kind="compaction", **run.stamp()))
        for event in events:
            yield event

    def clear(self) -> None:
        """Forget the conversation (``/clear``); the caller starts a new session."""
        self._messages.clear()
        self._state = TurnState.initial()
        self._tool_state = ToolSessionState()
        self._tracker = self._make_tracker()

    # --- the run -----------------------------------------------------------------------

    async def _drive(self, run: RunContext, queue: asyncio.Queue[Any]) -> None:
        try:
            final = await drive(self._state, run)
            self._state = final
            self._save_turn_state(final, run_end=final.stop_reason)
        except (asyncio.CancelledError, Exception) as error:
            if isinstance(error, asyncio.CancelledError) or run.cancel.cancelled:
                self._close_aborted(run)
            else:
                self._close_crashed(run, error)
        finally:
            queue.put_nowait(_DONE)

    @staticmethod
    async def _cancel_when_aborted(cancel: CancelToken, task: asyncio.Task[None]) -> None:
        await cancel.wait()
        task.cancel()

    def _close_aborted(self, run: RunContext) -> None:
        reason = run.cancel.reason or "interrupted by user"
        partial = "".join(run.scratch.text) if run.scratch.streaming else ""
        repaired, what = close_interrupted_turn(
            self._messages, partial_text=partial, completed=run.scratch.completed_results,
            running=dict(run.scratch.running_tools), reason=reason)
        for message in repaired:
            self._append(message)
        state = (run.state or self._state).next_turn().finish("aborted")
        self._state = state
        self._save_turn_state(state, run_end="aborted")
        run.emit(Aborted(reason=f"{reason} ({what})", partial_text=partial, **run.stamp()))

    def _close_crashed(self, run: RunContext, error: BaseException) -> None:
        # An engine bug must still leave a transcript the next request can use.
        repaired, _ = close_interrupted_turn(
            self._messages, partial_text="", completed=run.scratch.completed_results,
            running=dict(run.scratch.running_tools), reason=f"internal error: {error}")
        for message in repaired:
            self._append(message)
        state = (run.state or self._state).next_turn().finish("error")
        self._state = state
        self._save_turn_state(state, run_end="error")
        self.metrics.errors[f"internal:{type(error).__name__}"] += 1
        run.emit(Error(message=f"internal error: {type(error).__name__}: {error}", kind="internal",
                       **run.stamp()))

    def _stamp(self, turn_id: str) -> Mapping[str, Any]:
        return {"turn_id": turn_id, "agent_id": self.agent_id,
                "parent_tool_use_id": self.parent_tool_use_id,
                "parent_turn_id": self._state.parent_turn_id, "depth": self.config.depth}

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        if self.session is not None:
            self.session.append_message(message)

    def _save_turn_state(self, state: TurnState, run_end: str | None = None) -> None:
        if self.session is not None:
            self.session.append_turn_state(state, run_end=run_end)

    def _replace_history(self, messages: Sequence[Message]) -> None:
        self._messages = list(messages)
        if self.session is not None:
            self.session.append_compaction(self._messages)

    # --- model ---------------------------------------------------------------------------

    def _build_request(self) -> ProviderRequest:
        return ProviderRequest(model=self.config.model, system=self._system, messages=tuple(self._messages),
                               tools=self._tool_specs, max_tokens=self.config.max_tokens,
                               thinking_budget=self.config.thinking_budget)

    def _stream(self, request: ProviderRequest, cancel: CancelToken) -> AsyncIterator[Any]:
        from .providers.retry import RetryPolicy, stream_with_retries

        self._tracker.before_request(self._messages)
        return stream_with_retries(self.provider, request, self._retry_policy or RetryPolicy(), cancel)

    def _cost_of(self, usage: Usage) -> float:
        from .providers.models import cost_usd

        return cost_usd(self.config.model, usage)

    def _observe_usage(self, usage: Usage) -> None:
        self._tracker.observe(usage)

    def _make_tracker(self) -> Any:
        from .context.tokens import ContextTracker, TokenCounter

        return ContextTracker(TokenCounter(self.config.model), system=self._system, tools=self._tool_specs)

    def _assemble_system_prompt(self) -> str:
        if self.context is not None:
            return self.context.system_prompt()
        from .context.prompts import BASE_INSTRUCTIONS

        return BASE_INSTRUCTIONS

    async def _maybe_compact(self, run: RunContext, *, force: bool = False, reason: str = "auto",
                             focus: str | None = None) -> bool:
        used, window = self.context_usage()
        if not force and used < self.config.compact_threshold * window:
            return False
        if len(self._messages) < 3:
            return False
        from .context.compressor import StructuredCompressor

        compressor = StructuredCompressor(self.provider, self.config.model, self._tracker.counter)
        result = await compressor.compact(tuple(self._messages), focus=focus, cancel=run.cancel)
        if getattr(result, "error", None):
            run.emit(Notice(level="warning", message=f"compaction fell back to {result.method}: {result.error}",
                            **run.stamp()))
        if result.messages == tuple(self._messages):
            return False
        self._replace_history(result.messages)
        self._tracker.reset_after_compaction()
        self.metrics.compactions += 1
        self.metrics.compaction_tokens_saved += max(0, result.tokens_before - result.tokens_after)
        run.emit(CompactionApplied(tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                                   method=result.method, reason=reason, **run.stamp()))
        return True

    # --- tools ---------------------------------------------------------------------------

    def _tool_context_factory(self, cancel: CancelToken, emit: Callable[[AgentEvent], None]
                              ) -> Callable[[str], ToolContext]:
        def make(call_id: str) -> ToolContext:
            def progress(text: str) -> None:
                from .events import ToolProgress

                emit(ToolProgress(call_id=call_id, text=text, **self._stamp(self._state.turn_id)))

            async def spawn(**kwargs: Any) -> ToolOutput:
                return await self.run_subagent(parent_call_id=call_id, cancel=cancel, emit=emit, **kwargs)

            return ToolContext(workspace=self.workspace, cancel=cancel, state=self._tool_state,
                               call_id=call_id, progress=progress, emit=emit, skills=self.skills,
                               spawn_subagent=spawn, depth=self.config.depth)

        return make

    async def run_subagent(self, *, description: str, prompt: str, tools: Sequence[str] | None,
                           parent_call_id: str, cancel: CancelToken,
                           emit: Callable[[AgentEvent], None]) -> ToolOutput:
        """Run a child agent to completion; only its final answer comes back."""
        if self.config.depth + 1 > self.config.max_depth:
            return ToolOutput(f"Sub-agents may nest at most {self.config.max_depth} deep; do this task yourself.",
                              is_error=True)
        child_config = self.config.inherit(tools=tuple(tools) if tools else None)
        unknown = [t for t in (tools or ()) if t not in self.registry.names]
        child = Agent(config=child_config, provider=self.provider, tools=list(self.registry),
                      workspace=self.workspace,
                      permissions=self.permissions.child() if self.permissions is not None else None,
                      skills=self.skills, context=None, system_prompt=self._subagent_system_prompt(),
                      bus=self.bus, retry_policy=self._retry_policy, parent_tool_use_id=parent_call_id,
                      turn_state=TurnState.initial(parent_turn_id=self._state.turn_id))
        final: AgentEvent | None = None
        try:
            async for event in child.run(prompt, cancel=cancel.child()):
                if isinstance(event, (Notice,)) or not _is_terminal(event):
                    emit(event)
                else:
                    final = event
                    emit(event)
        finally:
            self.metrics.merge_child(child.metrics)
        summary = (f"[sub-agent '{description}': {child.metrics.llm_calls} LLM calls, "
                   f"{child.metrics.tool_calls} tool calls, {child.metrics.usage.input_tokens + child.metrics.usage.output_tokens} tokens, "
                   f"${child.metrics.cost_usd:.4f}]")
        note = f"\n(ignored tools the parent does not have: {', '.join(unknown)})" if unknown else ""
        from .events import Finished

        if isinstance(final, Finished):
            return ToolOutput((final.result or "(the sub-agent gave no answer)") + "\n\n" + summary + note)
        last_text = next((m.text for m in reversed(child.messages) if m.role == "assistant" and m.text), "")
        what = getattr(final, "message", None) or getattr(final, "reason", None) or type(final).__name__
        return ToolOutput(f"The sub-agent did not finish ({what}). Its last words: {last_text or '(none)'}\n\n"
                          + summary + note, is_error=True)

    def _subagent_system_prompt(self) -> str:
        from .context.prompts import SUBAGENT_INSTRUCTIONS

        return SUBAGENT_INSTRUCTIONS


def _is_terminal(event: AgentEvent) -> bool:
    from .events import TERMINAL_EVENTS

    return isinstance(event, TERMINAL_EVENTS)
