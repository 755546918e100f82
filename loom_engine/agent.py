"""Agent: the public face of the engine.

    agent = Agent(AgentConfig(model="claude-sonnet-4-6"),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(".")))
    async for event in agent.run("fix the failing test"):
        ...

Control goes in through ``agent.bus`` (or the ``abort`` / ``answer_permission``
shortcuts); everything that happens comes out as events. The work is done by small
pieces this class only wires together: a :class:`Transcript`, a :class:`ModelClient`,
and per run a :class:`Run` that an :class:`AgentRuns` drives through the turn function.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .agent_runs import AgentRuns, UnsentPrompt, cancel_when_aborted
from .attachments import AttachmentSource, UserPrompt, expand_prompt
from .bus import EventBus
from .checkpoints import Checkpoints
from .config import AgentConfig
from .events import AgentEvent, Error
from .execution import CancelToken
from .hooks.config import HookEventName, HookSet
from .hooks.engine import HookEngine
from .hooks.outcome import HookVerdict
from .hooks.session_view import HookSessionView
from .memory.tree import TreeMemory
from .messages import Message
from .metrics import RunMetrics
from .model_client import ModelClient
from .parts import AgentParts
from .permissions.answer import PermissionAnswer
from .providers.base import Provider
from .relay import DONE
from .run import AgentIdentity, Run, RunDeps
from .subagents.definitions import AgentDefinition
from .subagents.spawn import ChildAgent, MakeProvider, run_subagent
from .tool_contexts import ToolContextFactory
from .tools.base import ToolOutput, ToolSessionState, subagent_tool_names
from .tools.registry import ToolRegistry
from .tools.source import ToolSource
from .tools.tool_block import ToolBlock
from .transcript import REFUSED_BY_USER, SessionLog, Transcript
from .turn_state import TurnState
from .user_command import run_user_command
from .workspace import Workspace

if TYPE_CHECKING:
    from .context.assembler import ContextAssembler
    from .context.instructions import PathRules
    from .mcp.manager import McpManager
    from .permissions.manager import PermissionManager
    from .providers.server_window import WindowFact
    from .sandbox.sandbox import Sandbox
    from .skills.catalog import SkillCatalog


class Agent:
    def __init__(self, config: AgentConfig, parts: AgentParts, *, session: SessionLog | None = None,
                 messages: Sequence[Message] = (), turn_state: TurnState | None = None,
                 system_prompt: str | None = None, identity: AgentIdentity | None = None,
                 context: ContextAssembler | None = None, path_rules: PathRules | None = None,
                 session_context: ContextAssembler | None = None, tree_memory: TreeMemory | None = None) -> None:
        # A configuration that names its skills (a sub-agent's) sees only those.
        if parts.skills is not None and config.skill_names is not None:
            parts = replace(parts, skills=parts.skills.restricted(config.skill_names))
        # Replacing it later reaches what each run reads (permissions, skills, snapshots,
        # the tools' sandbox); the provider, tools and hooks are bound below.
        self.parts = parts
        self.context = context
        # The ``paths:`` rules to give when a matching file is touched: the assembler's
        # (it finds them as it builds the prompt), or a sub-agent's own, given here.
        self._path_rules = path_rules
        # Whose instruction files this agent's sub-agents get: the session's assembler
        # (a sub-agent has no ``context`` of its own; its own sub-agents get them too).
        self._session_context = context if context is not None else session_context
        self.metrics = RunMetrics()
        self.identity = identity or AgentIdentity.new(config.depth)
        self._tools = ToolBlock(parts.tools, parts.tool_source, config.tool_names)
        self.transcript = Transcript(messages, session)
        # The system prompt and tools block are made once: they stay byte-identical for
        # the whole session so the provider's prompt cache keeps hitting (the tools block
        # changes only when the tool source's version does, between requests).
        system = system_prompt if system_prompt is not None else self._assemble_system_prompt()
        self.client = ModelClient(parts.provider, config, system=system, tools=self._tools.specs,
                                  retry_policy=parts.retry_policy, server_windows=parts.server_windows,
                                  breaker=parts.breakers.for_endpoint(parts.provider.name),
                                  usage_limits=parts.usage_limits,
                                  cache_key=lambda: self.session_id or self.identity.agent_id)
        self._runs = AgentRuns(turn_state or TurnState.initial(), parts.workspace)
        self._tool_state = ToolSessionState()
        # Its local, shared and inherited memories (a sub-agent's come from its parent).
        self._tree_memory = tree_memory or TreeMemory.start(redact=config.redactor.redact)
        # Hook scripts see a sub-agent's id and type (``agent_type``: a custom agent's name).
        child = config.depth > 0
        self._hook_session = HookSessionView(self)
        self._hook_engine = HookEngine(parts.hooks, parts.workspace.root, self._hook_session.current,
                                       agent_id=self.identity.agent_id if child else None,
                                       agent_type=(config.agent_type or "general-purpose") if child else None,
                                       redact=config.redactor.redact if config.redact_secrets else None,
                                       sandbox=parts.sandbox)

    @property
    def registry(self) -> ToolRegistry:  # the tools callable now (joiners come in at a turn boundary)
        return self._tools.registry

    @property
    def provider(self) -> Provider:
        return self.parts.provider

    @property
    def make_provider(self) -> MakeProvider | None:
        return self.parts.make_provider

    @property
    def workspace(self) -> Workspace:
        return self.parts.workspace

    @property
    def tool_source(self) -> ToolSource | None:
        return self.parts.tool_source

    @property
    def permissions(self) -> PermissionManager | None:
        return self.parts.permissions

    @property
    def skills(self) -> SkillCatalog | None:
        return self.parts.skills

    @property
    def bus(self) -> EventBus:
        return self.parts.bus

    @property
    def checkpoints(self) -> Checkpoints | None:
        return self.parts.checkpoints

    @property
    def hooks(self) -> HookSet:
        return self.parts.hooks

    @property
    def sandbox(self) -> Sandbox | None:
        return self.parts.sandbox

    # --- public API --------------------------------------------------------------------

    @property
    def config(self) -> AgentConfig:
        return self.client.config

    @property
    def agent_id(self) -> str:
        return self.identity.agent_id

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.transcript.messages

    @property
    def session(self) -> SessionLog | None:
        return self.transcript.session

    @property
    def turn_state(self) -> TurnState:
        return self._runs.state

    @property
    def system_prompt(self) -> str:
        return self.client.system

    @property
    def session_id(self) -> str | None:
        return self.session.id if self.session is not None else None

    @property
    def is_running(self) -> bool:
        return self._runs.running

    @property
    def todos(self) -> list[dict[str, Any]]:
        return list(self._tool_state.todos)

    @property
    def mcp(self) -> McpManager | None:
        """The MCP servers' connections, when the tools joining later are theirs."""
        if self.tool_source is None:
            return None
        from .mcp.tools import McpToolset  # the MCP package stays off the start-up path

        return self.tool_source.manager if isinstance(self.tool_source, McpToolset) else None

    def abort(self, reason: str = "interrupted by user", refused: tuple[str, ...] = ()) -> None:
        self.bus.abort(reason, refused)

    def refuse_and_stop(self, request_id: str, call_id: str) -> None:
        """The user said no to a permission question and stopped the turn ("n", Esc):
        the call is refused, not interrupted, and the model is told it was not applied."""
        self.bus.respond(request_id, PermissionAnswer("deny"))
        self.abort(REFUSED_BY_USER, refused=(call_id,))

    def pause(self) -> None:
        """Hold the run before its next turn (a call in progress finishes); abort still works."""
        self.bus.pause()

    def resume(self) -> None:
        self.bus.resume()

    async def aclose(self) -> None:
        """Close the provider's connections; call it on the event loop that used them,
        before that loop ends. The agent can run again afterwards (a new client is made)."""
        await self.client.aclose()

    def take_unsent_prompt(self) -> UnsentPrompt | None:
        """The last run's prompt if it failed before any answer (and was taken out of the
        conversation, so the next prompt is not merged with it); asked once."""
        return self._runs.take_unsent()

    def answer_permission(self, request_id: str, answer: PermissionAnswer) -> bool:
        return self.bus.respond(request_id, answer)

    def set_model(self, model: str) -> None:
        self.client.set_model(model)

    def choose_model(self, model: str) -> None:
        """The user's choice (/model): used from now on and saved with the session, so
        ``--continue`` and ``--resume`` go on with it."""
        self.set_model(model)
        self.transcript.save_model(model)

    def context_usage(self) -> tuple[int, int]:
        """(tokens the next request would use, the model's context window)."""
        return self.client.context_usage(self.transcript.messages)

    @property
    def context_window(self) -> int:
        return self.client.context_window

    def window_in_use(self) -> WindowFact:
        """The context window in use and where it came from (setting, server, model table)."""
        return self.client.window

    async def attach(self, prompt: str) -> UserPrompt:
        """The prompt with the files and folders it ``@``-mentions attached (read by this
        agent's read_file and ls tools, under its permission rules); pass it to :meth:`run`."""
        redactor = self.config.redactor
        return await expand_prompt(prompt, AttachmentSource(
            workspace=self.workspace, registry=self.registry, permissions=self.permissions,
            state=self._tool_state, redact=redactor.redact if self.config.redact_secrets else None))

    async def run(self, prompt: str | UserPrompt, *, cancel: CancelToken | None = None
                  ) -> AsyncGenerator[AgentEvent, None]:
        """Add the user's message and run turns until a terminal event.

        ``prompt`` is the text, or what :meth:`attach` made of it. ``cancel`` is given
        for sub-agents (a child of the parent's token); a top-level run arms a fresh
        token on the bus.
        """
        if self._runs.running:
            raise RuntimeError("this agent is already running; wait for the run to end or abort it")
        self._runs.running = True
        if cancel is None:
            self.bus.reset()
            cancel = self.bus.cancel_token
        self._runs.state = self._runs.state.resumed()
        self._runs.unsent = None
        queue: asyncio.Queue[Any] = asyncio.Queue()
        errors: list[Error] = []

        def emit(event: Any) -> None:
            if isinstance(event, Error) and event.depth == 0:
                errors.append(event)
            queue.put_nowait(event)

        run = self._new_run(emit, cancel)
        task = asyncio.create_task(self._runs.drive(run, queue, prompt, errors, tool_source=self.tool_source,
                                                    tool_state=self._tool_state))
        watcher = asyncio.create_task(cancel_when_aborted(cancel, task))
        try:
            async with aclosing(self._runs.relay_events(queue, task, cancel)) as events:
                async for event in events:
                    yield event
        finally:
            watcher.cancel()

    async def run_user_command(self, command: str) -> AsyncIterator[AgentEvent]:
        """Run a shell command the user typed (``!command``) at once, as their shell
        would (no permission question, outside the sandbox); yields the call's events.
        Its output is added to the conversation for the next request; no model turn starts."""
        if self._runs.running:
            raise RuntimeError("this agent is already running; wait for the run to end or abort it")
        self._runs.running = True
        self.bus.reset()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        run = self._new_run(queue.put_nowait, self.bus.cancel_token)

        async def work() -> None:
            try:
                # An abort reaches the command through the cancel token: bash stops it
                # and returns what it printed, which is kept.
                await run_user_command(run, command)
            except Exception as error:
                run.emit(Error(message=f"internal error: {type(error).__name__}: {error}", kind="internal",
                               **run.stamp()))
            finally:
                queue.put_nowait(DONE)

        async with aclosing(self._runs.relay_events(queue, asyncio.create_task(work()), run.cancel)) as events:
            async for event in events:
                yield event

    async def compact(self, focus: str | None = None) -> AsyncIterator[AgentEvent]:
        """Compact the history now (``/compact``); yields the resulting events."""
        if self._runs.running:
            raise RuntimeError("cannot compact while a run is in progress")
        self.bus.reset()
        events: list[AgentEvent] = []
        run = self._new_run(events.append, self.bus.cancel_token)
        try:
            if await run.compact(force=True, reason="manual", focus=focus):
                # As after Claude Code's /compact: SessionStart hooks may restore context.
                events.extend(await self.session_started("compact"))
        except Exception as error:
            events.append(Error(message=f"compaction failed: {error}", kind="compaction", **run.stamp()))
        for event in events:
            yield event

    def clear(self) -> None:
        """Forget the conversation (``/clear``); the caller starts a new session."""
        self.transcript.clear()
        self._runs.hook_context.clear()
        self._runs.state = TurnState.initial()
        self._tool_state = ToolSessionState()
        self._tree_memory = self._tree_memory.renewed()
        self.client.forget_usage()

    # --- session hooks (the application calls these) -------------------------------------

    async def session_started(self, source: str) -> tuple[AgentEvent, ...]:
        """Run the SessionStart hooks; ``source``: startup | resume | clear | compact.
        What they print is added to the next request's context. Returns the HookRan
        (and systemMessage Notice) events to show."""
        verdict, events = await self._fire_outside_run("SessionStart", {"source": source}, source)
        if verdict.context:
            self._runs.hook_context.append(f"SessionStart hook ({source}):\n{verdict.context}")
        return events

    async def session_ended(self, reason: str) -> tuple[AgentEvent, ...]:
        """Run the SessionEnd hooks; ``reason``: clear | logout | prompt_input_exit | other.
        Their answers cannot change anything; the events say how they went."""
        _, events = await self._fire_outside_run("SessionEnd", {"reason": reason}, reason)
        return events

    async def notify_idle(self, message: str = "Loom is waiting for your input") -> tuple[AgentEvent, ...]:
        """Run the Notification hooks for ``idle_prompt`` (the user has not answered for a while)."""
        _, events = await self._fire_outside_run(
            "Notification", {"message": message, "notification_type": "idle_prompt"}, "idle_prompt")
        return events

    async def _fire_outside_run(self, event: HookEventName, fields: dict[str, Any], name: str
                                ) -> tuple[HookVerdict, tuple[AgentEvent, ...]]:
        stamp = {"turn_id": self._runs.state.turn_id, "agent_id": self.identity.agent_id,
                 "depth": self.identity.depth}
        return await self._hook_engine.fire_alone(event, fields, name, stamp)

    async def run_subagent(self, *, description: str, prompt: str, tools: Sequence[str] | None,
                           parent_call_id: str, cancel: CancelToken,
                           emit: Callable[[AgentEvent], None],
                           agent: AgentDefinition | None = None) -> ToolOutput:
        """Run a child agent to completion; only its final answer comes back. ``agent``
        is the custom agent it runs as (None: the general read-only sub-agent)."""
        return await run_subagent(self._make_child, parent_config=self.config,
                                  parent_tools=self.registry.names,
                                  default_tools=subagent_tool_names(self.registry), metrics=self.metrics,
                                  description=description, prompt=prompt, tools=tools,
                                  parent_call_id=parent_call_id, cancel=cancel, emit=emit, definition=agent,
                                  record=self.transcript.record_subagent)

    # --- the run -----------------------------------------------------------------------

    def _new_run(self, emit: Callable[[AgentEvent], None], cancel: CancelToken) -> Run:
        contexts = ToolContextFactory(workspace=self.workspace, state=self._tool_state, skills=self.skills,
                                      sandbox=self.sandbox, read_rules=self.permissions,
                                      run_subagent=self.run_subagent, session_id=self.session_id,
                                      files=self.parts.files, commands=self.parts.commands,
                                      memory_scopes=self._tree_memory.scopes(self.parts.global_memory()))
        deps = RunDeps(config=self.config, identity=self.identity, transcript=self.transcript, client=self.client,
                       tools=self._tools, tool_contexts=contexts, bus=self.bus, metrics=self.metrics,
                       permissions=self.permissions, checkpoints=self.checkpoints, hooks=self._hook_engine,
                       path_rules=self.context.path_rules if self.context is not None else self._path_rules,
                       observer=self.parts.observer, before_compaction=self.parts.before_compaction)
        return Run(deps, self._runs.state, emit=emit, cancel=cancel)

    def _assemble_system_prompt(self) -> str:
        if self.context is not None:
            if self.context.tools is None:  # the notes of the tools this agent has
                self.context.tools = tuple(self.registry)
            return self.context.system_prompt()
        from .context.prompts import BASE_INSTRUCTIONS

        return BASE_INSTRUCTIONS

    def _make_child(self, config: AgentConfig, parent_call_id: str,
                    definition: AgentDefinition | None = None) -> ChildAgent:
        """The child agent, of this agent's own kind, built from these parts narrowed
        (see :meth:`AgentParts.for_child`); a custom agent's body is its system prompt,
        followed by the session's instruction files (its ``paths:`` rules come as the
        child touches their files), as Claude Code's sub-agents get CLAUDE.md."""
        from .context.prompts import SUBAGENT_INSTRUCTIONS

        parts = self.parts.for_child(config, definition, vendor=self.config.provider)
        own = definition.prompt if definition is not None else SUBAGENT_INSTRUCTIONS
        context = self._session_context
        child = type(self)(config, parts, turn_state=TurnState.initial(parent_turn_id=self._runs.state.turn_id),
                           system_prompt=context.subagent_prompt(own) if context is not None else own,
                           identity=AgentIdentity.new(config.depth, parent_call_id),
                           path_rules=context.subagent_path_rules() if context is not None else None,
                           session_context=context, tree_memory=self._tree_memory.child())
        child._hook_session.parent = self._hook_session.current
        return child
