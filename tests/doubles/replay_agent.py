"""ReplayAgent: a whole `ChatAgent` that replays scripted events instead of calling a model.

For chat tests and benchmarks that need events a scripted provider cannot make a real
`Agent` emit (a retry, a compaction, a hook's run, a sub-agent's deltas at a given
pace). Where a real `Agent` with `ScriptedProvider` can play the scene
(tests/cli/tui/helpers.py), prefer that.

The script is a list of events, or a function of the prompt that yields them (a
benchmark's paced stream). A `PermissionRequested` waits for `answer_permission`, then
the answer is replayed as `PermissionAnswered`, as the engine would. Every other member
has the quiet default of an agent without a session, hooks, MCP servers or sandbox.
mypy checks it against the Protocol (tests/cli/test_chat_agent.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.attachments import UserPrompt
from loom_engine.bus import EventBus
from loom_engine.config import AgentConfig
from loom_engine.events import AgentEvent, PermissionAnswered, PermissionRequested
from loom_engine.hooks.config import HookSet
from loom_engine.messages import Message
from loom_engine.metrics import RunMetrics
from loom_engine.run import AgentIdentity
from loom_engine.tools.registry import ToolRegistry
from loom_engine.transcript import Transcript
from loom_engine.turn_state import TurnState
from loom_engine.workspace import Workspace

if TYPE_CHECKING:
    from loom_engine.agent_runs import UnsentPrompt
    from loom_engine.checkpoints import Checkpoints
    from loom_engine.execution import CancelToken
    from loom_engine.mcp.manager import McpManager
    from loom_engine.permissions.answer import PermissionAnswer
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.providers.server_window import WindowFact
    from loom_engine.sandbox import Sandbox
    from loom_engine.skills.catalog import SkillCatalog
    from loom_engine.transcript import SessionLog

Script = Sequence[AgentEvent] | Callable[[str | UserPrompt], AsyncIterator[AgentEvent]]


class ReplayAgent:
    """Plays ``script`` for every run (a prompt, a `!command`, a compaction) and records
    what the chat asked of it: ``prompts``, ``answers``, ``aborted``, ``closed``."""

    def __init__(self, script: Script = (), *, workspace: Path, model: str = "fake-model",
                 messages: Sequence[Message] = (), session_id: str | None = None,
                 context: tuple[int, int] = (50_000, 200_000)) -> None:
        self.script = script
        self._config = AgentConfig(model=model, provider="scripted")
        self._workspace = Workspace.at(workspace)
        self._transcript = Transcript(messages)
        self._session_id = session_id
        self._context = context
        self._registry = ToolRegistry()
        self._hooks = HookSet()
        self._bus = EventBus()
        self._identity = AgentIdentity("agent_replay")
        self._metrics = RunMetrics()
        self._running = False
        self.prompts: list[str] = []
        self.answers: list[tuple[str, PermissionAnswer]] = []
        self.aborted: str | None = None  # the reason of the last abort
        self.closed = False
        self._answered: asyncio.Future[None] | None = None

    # --- what it is -----------------------------------------------------------------------
    @property
    def config(self) -> AgentConfig:
        return self._config

    @property
    def workspace(self) -> Workspace:
        return self._workspace

    @property
    def permissions(self) -> PermissionManager | None:
        return None

    @property
    def skills(self) -> SkillCatalog | None:
        return None

    @property
    def registry(self) -> ToolRegistry:
        return self._registry

    @property
    def checkpoints(self) -> Checkpoints | None:
        return None

    @property
    def sandbox(self) -> Sandbox | None:
        return None

    @property
    def mcp(self) -> McpManager | None:
        return None

    @property
    def hooks(self) -> HookSet:
        return self._hooks

    @property
    def bus(self) -> EventBus:
        return self._bus

    @property
    def identity(self) -> AgentIdentity:
        return self._identity

    @property
    def turn_state(self) -> TurnState:
        return TurnState.initial()

    # --- what it holds --------------------------------------------------------------------
    @property
    def messages(self) -> tuple[Message, ...]:
        return self._transcript.messages

    @property
    def session(self) -> SessionLog | None:
        return None

    @property
    def transcript(self) -> Transcript:
        return self._transcript

    @property
    def session_id(self) -> str | None:
        return self._session_id

    @property
    def metrics(self) -> RunMetrics:
        return self._metrics

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def todos(self) -> list[dict[str, Any]]:
        return []

    def context_usage(self) -> tuple[int, int]:
        return self._context

    def window_in_use(self) -> WindowFact:
        from loom_engine.providers.server_window import WindowFact

        return WindowFact(self._context[1], "the replay")

    # --- what it does ---------------------------------------------------------------------
    async def attach(self, prompt: str) -> UserPrompt:
        return UserPrompt(prompt)

    async def run(self, prompt: str | UserPrompt, *, cancel: CancelToken | None = None
                  ) -> AsyncGenerator[AgentEvent, None]:
        self.prompts.append(prompt.text if isinstance(prompt, UserPrompt) else prompt)
        self._running = True
        try:
            async for event in self._replay(prompt):
                yield event
        finally:
            self._running = False

    def run_user_command(self, command: str) -> AsyncIterator[AgentEvent]:
        return self.run(f"!{command}")

    def compact(self, focus: str | None = None) -> AsyncIterator[AgentEvent]:
        return self.run(f"/compact {focus or ''}".strip())

    def clear(self) -> None:
        self._transcript = Transcript()

    def abort(self, reason: str = "interrupted by user") -> None:
        self.aborted = reason

    def refuse_and_stop(self, request_id: str, call_id: str) -> None:
        self.abort("refused by user")

    def answer_permission(self, request_id: str, answer: PermissionAnswer) -> bool:
        self.answers.append((request_id, answer))
        if self._answered is not None and not self._answered.done():
            self._answered.set_result(None)
        return True

    def take_unsent_prompt(self) -> UnsentPrompt | None:
        return None

    def set_model(self, model: str) -> None:
        self._config = dataclasses.replace(self._config, model=model)

    def choose_model(self, model: str) -> None:
        self.set_model(model)

    async def session_started(self, source: str) -> tuple[AgentEvent, ...]:
        return ()

    async def session_ended(self, reason: str) -> tuple[AgentEvent, ...]:
        return ()

    async def notify_idle(self, message: str = "") -> tuple[AgentEvent, ...]:
        return ()

    async def aclose(self) -> None:
        self.closed = True

    # --- the replay -----------------------------------------------------------------------
    async def answer_to(self, request: PermissionRequested) -> PermissionAnswered:
        """Wait for the chat's answer to ``request``; the event the engine emits for it."""
        while (answer := dict(self.answers).get(request.request_id)) is None:
            self._answered = asyncio.get_running_loop().create_future()
            await self._answered
        return PermissionAnswered(request_id=request.request_id, call_id=request.call_id,
                                  decision=answer.decision, note=answer.note)

    async def _replay(self, prompt: str | UserPrompt) -> AsyncIterator[AgentEvent]:
        if callable(self.script):
            async for event in self.script(prompt):
                yield event
            return
        for event in self.script:
            yield event
            if isinstance(event, PermissionRequested):
                yield await self.answer_to(event)
