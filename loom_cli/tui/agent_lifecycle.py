"""The agent's life in the chat: start-up after the first frame, then each agent built,
installed, and replaced (/clear, /resume).

Start-up order: a resumed session's history is read and shown first (it needs no
agent, nor the provider SDKs the agent imports), then the one trust question when the
project adds something not trusted yet (settings that widen, hooks, MCP servers), then
the agent is built in a thread. When it cannot
be built the chat stays usable: the first-run setup text when the provider's key is
missing, one error line otherwise.

Start-up warnings (a broken agent file, a shadowed command, untrusted hooks) and the
line saying rewind's snapshots are off are shown once per chat: /clear and /resume
build a new agent, and the same warning again would only bury the conversation.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from loom_engine.messages import prompt_count

from ..sandbox_report import status_of
from ..snapshot_notice import snapshot_notices
from ..turns import SessionHook, session_hook_failures
from ..wording import conversation_length
from .first_run import missing_key, setup_text, setup_title, welcome_text
from .markdown_render import warm_up_highlighting
from .mcp_chat import start_mcp
from .options import AgentUnavailable, TuiOptions, build_agent, close_agent, default_history_loader
from .status_bar import StatusBar, StatusInfo
from .todo_panel import TodoPanel
from .transcript import Transcript, entries_from_messages

if TYPE_CHECKING:
    from ..chat_agent import ChatAgent
    from ..memory_setup import SessionPromoter


class AgentHost(Protocol):
    """What the agent's life reads and changes in the app."""

    options: TuiOptions
    agent: ChatAgent | None
    agent_error: str | None  # why there is no agent, once building it failed
    show_welcome: bool
    bypass_allowed: bool
    workspace_root: Path
    loaded: asyncio.Event
    warm: asyncio.Event
    transcript: Transcript
    todos: TodoPanel
    status_bar: StatusBar

    @property
    def model(self) -> str: ...

    @property
    def mode(self) -> str: ...

    def refresh_context(self) -> None: ...

    async def wait_for_run_to_close(self) -> None: ...

    async def clear_session_view(self) -> None:
        """The transcript, the to-dos and the status bar of a session that ended, emptied."""
        ...

    def send_queued(self) -> None: ...

    def call_after_refresh(self, callback: Callable[[], None]) -> bool: ...


class AgentLifecycle:
    def __init__(self, host: AgentHost, ask_trust: Callable[[TuiOptions], Awaitable[TuiOptions]]) -> None:
        self.host = host
        self.ask_trust = ask_trust  # the trust question, when the project adds something untrusted
        self._history_shown = -1  # messages of the history on screen; -1: none shown
        # When the saved history was read and first painted (for benchmarks and tests).
        self.history_loaded_at: float | None = None
        self.history_shown_at: float | None = None
        self._start_source = "startup"  # what SessionStart hooks are told: startup | resume | clear
        self._idle_wait: asyncio.Task[None] | None = None
        self._warned: set[str] = set()  # the warnings this chat has shown (each only once)
        self.sandbox_source = "default"  # which setting chose the sandbox's mode (for /sandbox)
        # Proposes which facts of the session to remember (asked at /clear and on
        # quitting); None: [memory] promote is off.
        self.promoter: SessionPromoter | None = None

    async def start(self) -> None:
        """Start-up, in a worker once the first frame is painted."""
        host = self.host
        options = host.options
        if options.continue_session or options.resume_id:
            loader = options.history_loader or default_history_loader

            def load() -> list[Any]:
                found = list(loader(options))
                if found:
                    warm_up_highlighting()  # the history is full of code fences
                return found

            try:
                messages = await asyncio.to_thread(load)
            except Exception:  # the agent's own load reports a bad session
                messages = []
            self.history_loaded_at = time.perf_counter()
            if messages and host.agent is None:
                await self._show_history(messages)
        options = host.options = await self.ask_trust(options)
        await self.load(options)
        await asyncio.to_thread(warm_up_highlighting)
        if host.options.manage_gc:
            # Start-up's objects (the SDK's modules) live on: out of the first answer's gen-2 scans.
            gc.freeze()
        host.warm.set()

    async def _show_history(self, messages: Sequence[Any]) -> None:
        host = self.host
        entries = entries_from_messages(messages)
        await host.transcript.load_history(entries, host.options.resume_window)
        if host.options.manage_gc:
            gc.freeze()  # a resumed history is long-lived; keep it out of gen-2 scans
        self._history_shown = len(messages)
        host.call_after_refresh(self._history_painted)

    def _history_painted(self) -> None:
        self.history_shown_at = time.perf_counter()

    async def load(self, options: TuiOptions, *, announce: str | None = None) -> None:
        host = self.host
        try:
            built = await build_agent(options)
        except AgentUnavailable as error:
            self._show_no_agent(error)
            host.status_bar.change(note="no agent")
            host.loaded.set()
            return
        self.sandbox_source = built.sandbox_source
        self.promoter = built.promoter
        await self._install(built.agent, built.warnings, announce)
        # After the first frame: the servers connect now.
        start_mcp(host, built, show=lambda words: host.status_bar.change(mcp=words))
        self._welcome(host.agent.config.provider if host.agent is not None else "")

    def _show_no_agent(self, error: AgentUnavailable) -> None:
        """The first-run screen when the provider has no key; the error line otherwise."""
        host = self.host
        missing = missing_key(error, os.environ)
        if missing is None:
            host.agent_error = str(error)
            self._welcome("")
            host.transcript.add_notice(f"✗ cannot start the agent: {error}", "error")
            return
        from loom_engine.paths import user_config_file

        host.agent_error = f"{missing.variable} is not set"
        self._welcome(missing.provider)
        host.transcript.add_notice(setup_title(missing), "error")
        host.transcript.add_notice(setup_text(missing, user_config_file()), "output")

    def _welcome(self, provider: str) -> None:
        host = self.host
        if host.show_welcome:
            host.show_welcome = False
            host.transcript.add_notice(welcome_text(host.workspace_root.name or str(host.workspace_root),
                                                    provider, host.model), "output")

    async def _install(self, agent: ChatAgent, warnings: Sequence[str], announce: str | None) -> None:
        host = self.host
        host.agent = agent
        host.agent_error = None
        mode = host.mode
        if mode == "bypass":
            host.bypass_allowed = True
        host.status_bar.set_info(StatusInfo(model=host.model, mode=mode, sandbox=status_of(agent)))
        host.refresh_context()
        host.status_bar.change(note="")
        messages = list(agent.messages)
        if messages:
            if self._history_shown != len(messages):
                await self._show_history(messages)
            session = agent.session_id
            host.transcript.add_notice(
                f"resumed session {session or ''} · {conversation_length(prompt_count(messages))}", "info")
            todos = agent.todos
            if todos:
                host.todos.set_todos(todos)
        if announce:
            host.transcript.add_notice(announce, "info")
        for warning in warnings:
            self._warn_once(warning, warning)
        self.show_snapshot_notices()  # git missing is known now; the others after a prompt
        if mode == "bypass":
            host.transcript.add_notice("⚠ bypass mode: every tool call runs without asking", "warning")
        # Before the first prompt goes: what SessionStart hooks print is context for it.
        await self.session_hooks(agent, "session_started", "resume" if messages else self._start_source)
        host.loaded.set()
        host.send_queued()

    async def replace(self, options: TuiOptions, announce: str) -> None:
        """A new session (/clear) or another one (/resume): the old agent closes first."""
        host = self.host
        await host.wait_for_run_to_close()  # an interrupted run still closes its turn in the old session
        clearing = not (options.resume_id or options.continue_session)
        await self.session_hooks(host.agent, "session_ended", "clear" if clearing else "other")
        self._start_source = "clear" if clearing else "resume"
        await close_agent(host.agent)
        await host.clear_session_view()
        host.agent = None
        self._history_shown = -1
        host.loaded.clear()
        host.status_bar.change(note="loading…")
        await self.load(options, announce=announce)

    def _warn_once(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.host.transcript.add_notice(f"⚠ {text}", "warning")

    def show_snapshot_notices(self) -> None:
        """One line when rewind's snapshots are off or limited here, once per reason per
        chat; called at start and when a run ends (its snapshots were tried by then)."""
        for notice in snapshot_notices(self.host.agent.checkpoints if self.host.agent is not None else None):
            self._warn_once(f"snapshots: {notice.key}", notice.text)

    # Claude Code's wait before its idle_prompt notification.
    idle_prompt_s = 60.0

    def arm_idle_notification(self) -> None:
        """A run ended and the chat waits for the user: after ``idle_prompt_s`` without a
        new prompt, the Notification hooks run for ``idle_prompt`` (once per wait)."""
        self.cancel_idle_notification()
        agent = self.host.agent
        if agent is not None and agent.hooks:
            self._idle_wait = asyncio.get_running_loop().create_task(self._notify_when_idle(agent))

    def cancel_idle_notification(self) -> None:
        if self._idle_wait is not None:
            self._idle_wait.cancel()
            self._idle_wait = None

    async def _notify_when_idle(self, agent: ChatAgent) -> None:
        await asyncio.sleep(self.idle_prompt_s)
        if self.host.agent is agent and not agent.is_running:
            await self.session_hooks(agent, "notify_idle", "Loom is waiting for your input")

    async def session_hooks(self, agent: ChatAgent | None, hook: SessionHook, argument: str, *,
                            show: bool = True) -> None:
        """SessionStart / SessionEnd hooks; one line for a hook that failed or blocked."""
        if agent is None:
            return
        try:
            failed = await session_hook_failures(agent, hook, argument)
        except Exception as error:  # a hook must never keep the chat from starting or ending
            failed = ()
            if show:
                self.host.transcript.add_notice(f"⚠ session hooks failed: {error}", "warning")
        for event in failed if show else ():
            self.host.transcript.add_notice(f"⚠ {event.event} hook: {event.message}", "warning")
