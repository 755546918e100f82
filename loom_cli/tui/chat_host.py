"""What a slash command may use of the chat: the `ChatHost` Protocol.

Every other collaborator of the app gets a host Protocol like this (`AgentHost`,
`RunHost`, `KeysHost`, `McpHost`); the command handlers in ``tui/commands/`` get this
one, so they depend on what they use, not on `LoomApp`. `LoomApp` satisfies it: mypy
checks it where the app hands itself to ``run_command`` and ``rewind_command``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.worker import Worker

    from ..chat_agent import ChatAgent
    from .agent_lifecycle import AgentLifecycle
    from .commands.rewind_undo import RewindUndo
    from .key_hold import KeyHold
    from .options import TuiOptions
    from .prompt_input import PromptInput
    from .prompt_queue import PromptQueue
    from .run_view import RunView
    from .status_bar import StatusInfo
    from .transcript import Transcript

ScreenResult = TypeVar("ScreenResult")


class ChatHost(Protocol):
    """Exactly what the command handlers read and call on the chat."""

    # --- what the chat is showing and holding ----------------------------------------------
    options: TuiOptions
    workspace_root: Path
    agent_error: str | None  # why there is no agent, once building it failed
    bypass_allowed: bool  # Shift+Tab may cycle to bypass (it was asked for by name)
    last_rewind: RewindUndo | None  # what /rewind can undo
    key_hold: KeyHold  # keys pressed while a list is on its way are dropped
    transcript: Transcript
    prompt: PromptInput
    prompt_queue: PromptQueue
    run_view: RunView
    lifecycle: AgentLifecycle

    @property
    def agent(self) -> ChatAgent | None: ...
    @property
    def model(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def busy(self) -> bool: ...
    @property
    def status(self) -> StatusInfo: ...

    # --- what commands change ---------------------------------------------------------------
    def output(self, text: str) -> None: ...
    def send_queued(self) -> None: ...
    def set_mode(self, mode: str) -> bool: ...
    def switch_model(self, model: str) -> None: ...
    def compact(self, focus: str | None) -> None: ...
    def interrupt(self, reason: str | None = None) -> bool: ...
    def refresh_context(self) -> None: ...
    async def replace_agent(self, options: TuiOptions, announce: str) -> None: ...
    def action_quit_now(self) -> None: ...

    # --- Textual's, as the app has them ------------------------------------------------------
    def push_screen(self, screen: Screen[ScreenResult],
                    callback: Callable[[ScreenResult | None], None] | None = None) -> Any: ...
    async def push_screen_wait(self, screen: Screen[ScreenResult]) -> ScreenResult: ...
    def run_worker(self, work: Coroutine[Any, Any, None], name: str | None = "", group: str = "default",
                   description: str = "", exit_on_error: bool = True, start: bool = True,
                   exclusive: bool = False, thread: bool = False) -> Worker[None]: ...
