"""What the chat and ``loom run`` ask of an agent: the one typed seam between them and the engine.

Textual-free, so the headless runner uses it too. :class:`loom_engine.Agent` satisfies it
structurally (``tests/cli/test_chat_agent.py`` assigns one to it, and mypy checks that
assignment in CI); a test's stand-in implements it whole (``tests/doubles/replay_agent.py``).
Nothing in ``loom_cli`` asks an agent whether it has a member: it has every one listed here.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from loom_engine.agent import Agent, UnsentPrompt
    from loom_engine.attachments import UserPrompt
    from loom_engine.bus import EventBus
    from loom_engine.checkpoints import Checkpoints
    from loom_engine.config import AgentConfig
    from loom_engine.events import AgentEvent
    from loom_engine.execution import CancelToken
    from loom_engine.hooks.config import HookSet
    from loom_engine.mcp.manager import McpManager
    from loom_engine.messages import Message
    from loom_engine.metrics import RunMetrics
    from loom_engine.permissions.answer import PermissionAnswer
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.run import AgentIdentity
    from loom_engine.sandbox import Sandbox
    from loom_engine.skills.catalog import SkillCatalog
    from loom_engine.tools.registry import ToolRegistry
    from loom_engine.transcript import SessionLog, Transcript
    from loom_engine.turn_state import TurnState
    from loom_engine.workspace import Workspace


class ChatAgent(Protocol):
    """Exactly what the chat and the headless runner call on the agent they drive."""

    # --- what it is -----------------------------------------------------------------------
    @property
    def config(self) -> AgentConfig: ...
    @property
    def workspace(self) -> Workspace: ...
    @property
    def permissions(self) -> PermissionManager | None: ...
    @property
    def skills(self) -> SkillCatalog | None: ...
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def checkpoints(self) -> Checkpoints | None: ...
    @property
    def sandbox(self) -> Sandbox | None: ...
    @property
    def mcp(self) -> McpManager | None:
        """The MCP servers' connections, when any are configured."""
        ...
    @property
    def hooks(self) -> HookSet:
        """The hook commands in force (the chat arms the idle notification only when any are)."""
        ...
    # What running a custom command or a skill reads too (loom_engine.commands.invoke.CommandAgent).
    @property
    def bus(self) -> EventBus: ...
    @property
    def identity(self) -> AgentIdentity: ...
    @property
    def turn_state(self) -> TurnState: ...

    # --- what it holds --------------------------------------------------------------------
    @property
    def messages(self) -> tuple[Message, ...]: ...
    @property
    def session(self) -> SessionLog | None: ...
    @property
    def transcript(self) -> Transcript:
        """The conversation itself: what rewind cuts back."""
        ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def metrics(self) -> RunMetrics: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def todos(self) -> list[dict[str, Any]]: ...
    def context_usage(self) -> tuple[int, int]: ...

    # --- what it does ---------------------------------------------------------------------
    async def attach(self, prompt: str) -> UserPrompt: ...
    def run(self, prompt: str | UserPrompt, *, cancel: CancelToken | None = None
            ) -> AsyncGenerator[AgentEvent, None]:
        """An async generator: closing it (``aclose``) ends the run's turn."""
        ...
    def run_user_command(self, command: str) -> AsyncIterator[AgentEvent]: ...
    def compact(self, focus: str | None = None) -> AsyncIterator[AgentEvent]: ...
    def clear(self) -> None: ...
    def abort(self, reason: str = ...) -> None: ...
    def answer_permission(self, request_id: str, answer: PermissionAnswer) -> bool: ...
    def take_unsent_prompt(self) -> UnsentPrompt | None: ...
    def set_model(self, model: str) -> None: ...
    async def session_started(self, source: str) -> tuple[AgentEvent, ...]: ...
    async def session_ended(self, reason: str) -> tuple[AgentEvent, ...]: ...
    async def notify_idle(self, message: str = ...) -> tuple[AgentEvent, ...]: ...
    async def aclose(self) -> None: ...


if TYPE_CHECKING:
    # The engine's agent is a ChatAgent: mypy checks this assignment on every run.
    def _agent_is_a_chat_agent(agent: Agent) -> ChatAgent:
        return agent
