"""The `loom` Textual app: renders the engine's event stream, sends control back.

The engine runs as a Textual worker on the UI's own event loop: each engine event is
posted as a Textual message and becomes widget updates; Esc/Ctrl+C call
`agent.abort()`; a permission request opens the modal and its answer goes back with
`agent.answer_permission()`.

First frame first: this module imports neither the provider SDKs nor the agent. The
agent is built by `TuiOptions.agent_factory` in a thread after the app has mounted,
so `import anthropic` (about a second) happens while the user already sees the UI.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message as TextualMessage

from loom_engine.events import (
    Aborted,
    AgentEvent,
    AssistantMessage,
    BudgetExceeded,
    CompactionApplied,
    Error,
    Finished,
    MaxTurnsReached,
    Notice as NoticeEvent,
    PermissionAnswered,
    PermissionRequested,
    Retrying,
    TextDelta,
    ThinkingDelta,
    TodosUpdated,
    ToolCallStarted,
    ToolFinished,
    ToolProgress,
    TurnStarted,
    UsageUpdated,
)
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.workspace import find_workspace_root

from .commands import (
    COMMANDS,
    PERMISSION_MODES,
    cost_text,
    help_text,
    next_mode,
    parse_command,
    permissions_text,
    skills_text,
)
from .completion import list_workspace_files
from .markdown_stream import MarkdownStream, warm_up_highlighting
from .permission_modal import PermissionModal
from .prompt_input import CompletionMenu, PromptHistory, PromptInput, history_file
from .session_picker import SessionPicker
from .status_bar import ActivityLine, StatusBar, StatusInfo
from .todo_panel import TodoPanel
from .tool_block import SPINNER, ToolBlock, ToolCallData
from .transcript import ThinkingBlock, Transcript, entries_from_messages

AgentFactory = Callable[["TuiOptions"], Any]
SessionLister = Callable[[Path], Sequence[Any]]


@dataclass(frozen=True)
class TuiOptions:
    workspace: Path
    continue_session: bool = False
    resume_id: str | None = None
    model: str | None = None
    provider: str | None = None
    permission_mode: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    # Builds the agent (in a worker thread). Returns an Agent, or an object with
    # ``.agent`` and optionally ``.warnings`` (bootstrap's Built). None: loom_cli.bootstrap.
    agent_factory: AgentFactory | None = None
    # Lists earlier sessions of a workspace for /resume. None: the SessionStore.
    session_lister: SessionLister | None = None
    # Reads the messages of the session being resumed, so the history shows before the
    # agent (and the provider SDKs) are ready. None: the SessionStore.
    history_loader: Callable[["TuiOptions"], Sequence[Any]] | None = None
    # Where prompt history lives; None: loom_engine.paths.data_dir().
    data_dir: Path | None = None
    permission_guard_s: float = 1.0
    max_mounted_blocks: int = 150
    resume_window: int = 40  # transcript entries mounted when a session is resumed (about 10 turns)
    # Streamed text refreshes at most this often: 10 a second reads as smooth, and each
    # frame re-composes the scrolled screen, so more would cost CPU for nothing seen.
    max_fps: float = 10.0
    # Move the transcript's long-lived objects out of the cyclic GC's way between runs
    # (a full collection over a long session stalls the UI for a quarter second).
    manage_gc: bool = True


def default_agent_factory(options: TuiOptions) -> Any:
    """Builds the agent the way `loom run` does (imports the provider SDKs)."""
    from loom_cli.bootstrap import RunOptions, build_agent

    run_options = RunOptions(cwd=options.workspace, provider=options.provider, model=options.model,
                             continue_session=options.continue_session, resume_id=options.resume_id,
                             permission_mode=options.permission_mode, allow=options.allow, deny=options.deny)
    return build_agent(run_options, interactive=True)


def default_history_loader(options: TuiOptions) -> Sequence[Any]:
    from loom_engine.paths import sessions_dir
    from loom_engine.sessions.store import SessionStore

    store = SessionStore(sessions_dir())
    if options.resume_id:
        return store.load(options.resume_id).messages
    if options.continue_session:
        newest = store.newest(find_workspace_root(options.workspace))
        if newest is not None:
            return store.load(newest.id).messages
    return ()


def default_session_lister(workspace: Path) -> Sequence[Any]:
    from loom_engine.paths import sessions_dir
    from loom_engine.sessions.store import SessionStore

    infos, _warnings = SessionStore(sessions_dir()).list(workspace)
    return infos


class EngineEvent(TextualMessage):
    """One engine event, delivered on the UI loop."""

    def __init__(self, event: AgentEvent, run_seq: int) -> None:
        super().__init__()
        self.event = event
        self.run_seq = run_seq


class RunEnded(TextualMessage):
    def __init__(self, run_seq: int) -> None:
        super().__init__()
        self.run_seq = run_seq


class LoomApp(App[int]):
    TITLE = "Loom"
    FULL_COLLECT_EVERY = 25
    CSS = """
    Screen {
        layout: vertical;
    }
    #prompt {
        margin: 0 0 0 0;
    }
    """
    BINDINGS = [
        Binding("ctrl+c", "ctrl_c", "interrupt / quit", priority=True, show=False),
        Binding("ctrl+d", "quit_now", "quit", priority=True, show=False),
        Binding("shift+tab", "cycle_mode", "permission mode", priority=True, show=False),
        Binding("escape", "interrupt", "interrupt", show=False),
        Binding("ctrl+o", "toggle_tool_output", "expand tool output", show=False),
    ]

    def __init__(self, options: TuiOptions) -> None:
        super().__init__()
        self.options = options
        self.agent: Any = None
        self.agent_error: str | None = None
        self.queue: deque[str] = deque()
        self.running = False  # a run the UI is showing (false at once after Esc)
        self._worker_active = False  # the engine task has not finished yet
        self._run_seq = 0
        self._aborted_seq = -1
        self._compact_seq = -1
        self._compact_reported = False
        self._run_started = 0.0
        self._phase = ""
        self._current_md: MarkdownStream | None = None
        self._current_thinking: ThinkingBlock | None = None
        self._tool_blocks: dict[str, ToolBlock] = {}
        self._sub_md: dict[str, MarkdownStream] = {}
        self._permission_queue: deque[PermissionRequested] = deque()
        self._modal: PermissionModal | None = None
        self._ctrl_c_at = 0.0
        self._files: list[str] | None = None
        self._status = StatusInfo(mode=options.permission_mode or "")
        self._frame = 0
        self._bypass_allowed = options.permission_mode == "bypass"
        self.loaded = asyncio.Event()
        self.warm = asyncio.Event()  # highlighting lexers imported (for benchmarks)
        self.answers: list[tuple[str, PermissionAnswer | None]] = []
        self.first_frame_at: float | None = None
        self._history_shown = -1
        self._runs_since_collect = 0
        self.history_shown_at: float | None = None
        self.history_loaded_at: float | None = None
        data_dir = options.data_dir
        if data_dir is None:
            from loom_engine.paths import data_dir as default_data_dir

            data_dir = default_data_dir()
        self.workspace_root = find_workspace_root(options.workspace)
        self.history = PromptHistory(history_file(data_dir, self.workspace_root))

    # --- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # Kept as attributes: queries run against the active screen, which is the modal
        # while a permission question is open.
        menu = CompletionMenu(id="completion")
        self.transcript = Transcript(max_mounted=self.options.max_mounted_blocks, max_fps=self.options.max_fps,
                                     id="transcript")
        self.todos = TodoPanel(id="todos")
        self.activity = ActivityLine(id="activity")
        self.prompt = PromptInput(history=self.history, menu=menu, commands=COMMANDS, files=self._file_list,
                                  id="prompt")
        self.status_bar = StatusBar(id="status")
        yield self.transcript
        yield self.todos
        yield self.activity
        yield menu
        yield self.prompt
        yield self.status_bar

    def on_mount(self) -> None:
        self.prompt.focus()
        self.transcript.add_notice(f"Loom · {self.workspace_root.name or self.workspace_root}"
                                   " · /help for commands · Esc interrupts · Ctrl+D quits", "info")
        self._set_status(note="loading…")
        self.set_interval(0.1, self._tick)
        self.call_after_refresh(self._first_frame)

    def _first_frame(self) -> None:
        self.first_frame_at = time.perf_counter()
        # Only now start the heavy work: an import thread competes for the GIL and
        # would delay the first paint.
        self.run_worker(self._startup(), group="agent", exit_on_error=False)
        self.run_worker(self._load_files(), group="files", exit_on_error=False)

    async def _startup(self) -> None:
        options = self.options
        if options.continue_session or options.resume_id:
            loader = options.history_loader or default_history_loader

            def load() -> list[Any]:
                found = list(loader(options))
                if found:
                    warm_up_highlighting()  # the history is full of code fences
                return found

            try:
                messages = await asyncio.to_thread(load)
            except Exception:  # noqa: BLE001 - the agent's own load reports a bad session
                messages = []
            self.history_loaded_at = time.perf_counter()
            if messages and self.agent is None:
                await self._show_history(messages)
        await self._load_agent(options)
        await asyncio.to_thread(warm_up_highlighting)
        self.warm.set()

    async def _show_history(self, messages: Sequence[Any]) -> None:
        entries = entries_from_messages(messages)
        await self.transcript.load_history(entries, self.options.resume_window)
        if self.options.manage_gc:
            gc.freeze()  # a resumed history is long-lived; keep it out of gen-2 scans
        self._history_shown = len(messages)
        self.call_after_refresh(self._history_painted)

    def _history_painted(self) -> None:
        self.history_shown_at = time.perf_counter()

    # --- agent lifecycle ----------------------------------------------------------------

    async def _load_agent(self, options: TuiOptions, *, announce: str | None = None) -> None:
        factory = options.agent_factory or default_agent_factory
        try:
            built = await asyncio.to_thread(factory, options)
        except Exception as error:  # noqa: BLE001 - any setup failure is shown, not raised
            message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            self.agent_error = message
            self.transcript.add_notice(f"✗ cannot start the agent: {message}", "error")
            self._set_status(note="no agent")
            self.loaded.set()
            return
        agent = getattr(built, "agent", built)
        warnings = list(getattr(built, "warnings", ()) or ())
        await self._install_agent(agent, warnings, announce)

    async def _install_agent(self, agent: Any, warnings: Sequence[str], announce: str | None) -> None:
        self.agent = agent
        self.agent_error = None
        mode = self._mode()
        if mode == "bypass":
            self._bypass_allowed = True
        self._status = StatusInfo(model=self._model(), mode=mode)
        self._refresh_context()
        self._set_status(note="")
        messages = list(getattr(agent, "messages", ()) or ())
        if messages:
            if self._history_shown != len(messages):
                await self._show_history(messages)
            session = getattr(agent, "session_id", None)
            self.transcript.add_notice(
                f"resumed session {session or ''} · {len(self.transcript.entries)} blocks", "info")
            todos = getattr(agent, "todos", None)
            if todos:
                self.todos.set_todos(todos)
        if announce:
            self.transcript.add_notice(announce, "info")
        for warning in warnings:
            self.transcript.add_notice(f"⚠ {warning}", "warning")
        if mode == "bypass":
            self.transcript.add_notice("⚠ bypass mode: every tool call runs without asking", "warning")
        self.loaded.set()
        self._pump()

    async def _load_files(self) -> None:
        self._files = await asyncio.to_thread(list_workspace_files, self.workspace_root)
        self.prompt.refresh_completion()

    def _file_list(self) -> Sequence[str] | None:
        return self._files

    def _model(self) -> str:
        config = getattr(self.agent, "config", None)
        return str(getattr(config, "model", "") or self.options.model or "")

    def _mode(self) -> str:
        permissions = getattr(self.agent, "permissions", None)
        mode = getattr(permissions, "mode", None)
        value = getattr(mode, "value", mode)
        return str(value) if value else (self.options.permission_mode or "default")

    # --- status -----------------------------------------------------------------------

    def _set_status(self, **changes: Any) -> None:
        self._status = replace(self._status, **changes)
        self.status_bar.set_info(self._status)

    def _refresh_context(self) -> None:
        usage = getattr(self.agent, "context_usage", None)
        if not callable(usage):
            return
        try:
            used, window = usage()
        except Exception:  # noqa: BLE001 - a token estimate must never break the UI
            return
        self._set_status(context_used=int(used), context_window=int(window))

    def _tick(self) -> None:
        self._frame += 1
        if self.running:
            for block in self._tool_blocks.values():
                block.tick()
            elapsed = time.monotonic() - self._run_started
            spinner = SPINNER[self._frame % len(SPINNER)]
            message = f"{spinner} {self._phase or 'working'} · {elapsed:.0f}s · esc to interrupt"
        elif self.agent is None and self.agent_error is None:
            message = "loading the agent…"
        else:
            message = ""
        if self.queue:
            message += f"{' · ' if message else ''}{len(self.queue)} queued"
        self.activity.show(message)

    # --- submitting -------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        await self.submit(message.text)

    async def submit(self, text: str) -> None:
        command = parse_command(text)
        if command is not None:
            await self.run_command(command.name, command.arg)
            return
        self.queue.append(text)
        self._pump()

    def _pump(self) -> None:
        if self._worker_active or self.agent is None or not self.queue:
            return
        prompt = self.queue.popleft()
        self.transcript.add_user(prompt)
        self.transcript.follow()
        agent = self.agent
        self._start_run(lambda: agent.run(prompt))

    def _start_run(self, make_stream: Callable[[], AsyncIterator[AgentEvent]], phase: str = "thinking") -> None:
        self._run_seq += 1
        self.running = True
        self._worker_active = True
        self._run_started = time.monotonic()
        self._phase = phase
        self._current_md = None
        self._current_thinking = None
        self.run_worker(self._drive(make_stream, self._run_seq), group="run", exit_on_error=False)

    async def _drive(self, make_stream: Callable[[], AsyncIterator[AgentEvent]], seq: int) -> None:
        try:
            async for event in make_stream():
                self.post_message(EngineEvent(event, seq))
        except Exception as error:  # noqa: BLE001 - shown as an error line, the app lives on
            self.post_message(EngineEvent(Error(message=str(error) or type(error).__name__, kind="internal"), seq))
        finally:
            self.post_message(RunEnded(seq))

    def on_run_ended(self, message: RunEnded) -> None:
        if message.run_seq != self._run_seq:
            return
        self._worker_active = False
        quiet_compact = message.run_seq == self._compact_seq and not self._compact_reported
        if quiet_compact and message.run_seq != self._aborted_seq:
            self.transcript.add_notice("nothing to compact yet: the conversation is short", "info")
        if self.running:
            self._end_run()
        self._pump()

    def _end_run(self) -> None:
        if self.options.manage_gc:
            self.set_timer(0.5, self._settle_memory)
        self.running = False
        self._phase = ""
        self._finish_segment()
        if self._current_thinking is not None:
            self._current_thinking.finish()
            self._current_thinking = None
        for stream in self._sub_md.values():
            stream.finish()
        self._sub_md.clear()
        self._close_modal()
        self._permission_queue.clear()
        self._refresh_context()

    def _settle_memory(self) -> None:
        """Between runs: freeze what exists now so gen-2 collections skip it while streaming.

        Every `FULL_COLLECT_EVERY` runs the frozen objects are collected for real once
        (pruned blocks hold reference cycles), at a moment when no answer is streaming.
        """
        if self.running:
            return
        self._runs_since_collect += 1
        if self._runs_since_collect >= self.FULL_COLLECT_EVERY:
            self._runs_since_collect = 0
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    # --- engine events ----------------------------------------------------------------

    def on_engine_event(self, message: EngineEvent) -> None:
        event = message.event
        stale = message.run_seq != self._run_seq or message.run_seq == self._aborted_seq
        if isinstance(event, UsageUpdated):
            self._on_usage(event)
            return
        if event.depth > 0 and event.parent_tool_use_id:
            if not stale:
                self._on_subagent_event(event)
            return
        if stale:
            # After Esc the screen already shows the run as stopped; only let tool
            # blocks settle so none keeps spinning.
            if isinstance(event, ToolFinished):
                block = self._tool_blocks.get(event.call_id)
                if block is not None:
                    block.finish(content=event.content, is_error=event.is_error, duration_ms=event.duration_ms,
                                 display=event.display, interrupted=block.running)
            return
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)

    def _segment(self) -> MarkdownStream:
        if self._current_md is None:
            if self._current_thinking is not None:
                self._current_thinking.finish()
                self._current_thinking = None
            self._current_md = self.transcript.start_assistant()
        return self._current_md

    def _finish_segment(self) -> None:
        if self._current_md is not None:
            self._current_md.finish()
            self._current_md = None

    def _on_turn_started(self, event: TurnStarted) -> None:
        self._phase = "thinking"

    def _on_text_delta(self, event: TextDelta) -> None:
        self._phase = "writing"
        self._segment().append(event.text)

    def _on_thinking_delta(self, event: ThinkingDelta) -> None:
        self._phase = "thinking"
        if self._current_thinking is None:
            self._finish_segment()
            self._current_thinking = self.transcript.start_thinking()
        self._current_thinking.append(event.text)

    def _on_assistant_message(self, event: AssistantMessage) -> None:
        self._finish_segment()
        if self._current_thinking is not None:
            self._current_thinking.finish()
            self._current_thinking = None

    def _on_tool_call_started(self, event: ToolCallStarted) -> None:
        # A new text segment starts after every tool call: finished segments stay static.
        self._finish_segment()
        self._phase = f"running {event.name}"
        data = ToolCallData(call_id=event.call_id, name=event.name, input=dict(event.input))
        self._tool_blocks[event.call_id] = self.transcript.add_tool(data)

    def _on_tool_progress(self, event: ToolProgress) -> None:
        block = self._tool_blocks.get(event.call_id)
        if block is not None:
            block.add_live_output(event.text)

    def _on_tool_finished(self, event: ToolFinished) -> None:
        block = self._tool_blocks.get(event.call_id)
        if block is not None:
            block.finish(content=event.content, is_error=event.is_error, duration_ms=event.duration_ms,
                         display=event.display)
        if event.name in ("edit_file", "multi_edit", "write_file", "apply_patch", "bash"):
            self._refresh_context()
        self._phase = "thinking"

    def _on_permission_requested(self, event: PermissionRequested) -> None:
        self._phase = "waiting for your approval"
        block = self._tool_blocks.get(event.call_id)
        if block is not None:
            block.set_status("waiting")
        self._permission_queue.append(event)
        self._next_permission()

    def _on_permission_answered(self, event: PermissionAnswered) -> None:
        block = self._tool_blocks.get(event.call_id)
        if block is None:
            return
        if event.decision == "deny":
            block.set_status("denied", note=event.note or "")
        elif block.data.status == "waiting":
            block.set_status("running")

    def _on_todos_updated(self, event: TodosUpdated) -> None:
        self.todos.set_todos(event.todos)

    def _on_compacted(self, event: CompactionApplied) -> None:
        self._compact_reported = True
        self.transcript.add_notice(
            f"context compacted ({event.reason}, {event.method}): {event.tokens_before:,} → "
            f"{event.tokens_after:,} tokens", "info")
        self._refresh_context()

    def _on_usage(self, event: UsageUpdated) -> None:
        self._status = self._status.with_usage(event.usage, event.cost_usd)
        if event.depth == 0 and event.context_window:
            self._status = replace(self._status, context_used=event.context_tokens,
                                   context_window=event.context_window)
        self.status_bar.set_info(self._status)

    def _on_retrying(self, event: Retrying) -> None:
        if event.discard_partial and self._current_md is not None:
            self._current_md.reset()
        self.transcript.add_notice(
            f"↻ retrying in {event.delay_s:.1f}s (attempt {event.attempt}): {event.reason}", "warning")

    def _on_notice(self, event: NoticeEvent) -> None:
        self.transcript.add_notice(event.message, "warning" if event.level == "warning" else "info")

    def _on_finished(self, event: Finished) -> None:
        self._end_run()

    def _on_aborted(self, event: Aborted) -> None:
        self._mark_interrupted(event.reason)
        self._end_run()

    def _on_error(self, event: Error) -> None:
        self._compact_reported = True
        self.transcript.add_notice(f"✗ {event.message}" + (f" ({event.kind})" if event.kind else ""), "error")
        self._end_run()

    def _on_max_turns_reached(self, event: MaxTurnsReached) -> None:
        self.transcript.add_notice(f"stopped: reached the limit of {event.max_turns} turns", "warning")
        self._end_run()

    def _on_budget_exceeded(self, event: BudgetExceeded) -> None:
        self.transcript.add_notice(
            f"stopped: cost ${event.cost_usd:.4f} passed the budget of ${event.max_budget_usd:.2f}", "warning")
        self._end_run()

    # --- sub-agents -------------------------------------------------------------------

    def _on_subagent_event(self, event: AgentEvent) -> None:
        parent = self._tool_blocks.get(event.parent_tool_use_id or "")
        if parent is None:
            return
        key = event.agent_id or event.parent_tool_use_id or ""
        if isinstance(event, TextDelta):
            stream = self._sub_md.get(key)
            if stream is None:
                stream = MarkdownStream(classes="subagent-text", max_fps=self.options.max_fps)
                self._sub_md[key] = stream
                parent.subagent_box().mount(stream)
            stream.append(event.text)
            return
        if isinstance(event, (ToolCallStarted, AssistantMessage, Finished, Aborted, Error)):
            stream = self._sub_md.pop(key, None)
            if stream is not None:
                stream.finish()
        if isinstance(event, ToolCallStarted):
            block = ToolBlock(ToolCallData(call_id=event.call_id, name=event.name, input=dict(event.input),
                                           depth=event.depth))
            self._tool_blocks[event.call_id] = block
            parent.subagent_box().mount(block)
        elif isinstance(event, ToolProgress):
            self._on_tool_progress(event)
        elif isinstance(event, ToolFinished):
            self._on_tool_finished(event)
        elif isinstance(event, PermissionRequested):
            self._on_permission_requested(event)
        elif isinstance(event, PermissionAnswered):
            self._on_permission_answered(event)
        elif isinstance(event, (NoticeEvent, Retrying)):
            text = event.message if isinstance(event, NoticeEvent) else f"↻ retrying: {event.reason}"
            self.transcript.add_notice(f"  ↳ {text}", "warning")
        elif isinstance(event, Error):
            self.transcript.add_notice(f"  ↳ sub-agent error: {event.message}", "error")

    # --- permissions ------------------------------------------------------------------

    def _next_permission(self) -> None:
        if self._modal is not None or not self._permission_queue:
            return
        request = self._permission_queue.popleft()
        modal = PermissionModal(request, guard_s=self.options.permission_guard_s)
        self._modal = modal

        def answered(answer: PermissionAnswer | None) -> None:
            self._answered(request, answer)

        self.push_screen(modal, callback=answered)

    def _answered(self, request: PermissionRequested, answer: PermissionAnswer | None) -> None:
        self._modal = None
        self.answers.append((request.request_id, answer))
        if answer is not None and self.agent is not None:
            self.agent.answer_permission(request.request_id, answer)
            block = self._tool_blocks.get(request.call_id)
            if block is not None and block.data.status == "waiting":
                if answer.decision == "deny":
                    block.set_status("denied", note=answer.note or "")
                else:
                    block.set_status("running")
            self._phase = f"running {request.tool}" if answer.allowed else "thinking"
        self._next_permission()

    def _close_modal(self) -> None:
        if self._modal is not None:
            modal, self._modal = self._modal, None
            if modal.is_attached and self.screen is modal:
                modal.dismiss(None)

    # --- control ----------------------------------------------------------------------

    def _mark_interrupted(self, reason: str = "interrupted by user") -> None:
        if self._current_md is not None:
            self.transcript.mark_interrupted(self._current_md)
        self._finish_segment()
        for block in self._tool_blocks.values():
            if block.running:
                block.set_status("interrupted")
        self.transcript.add_notice(f"⏹ {reason}", "warning")

    def interrupt(self) -> bool:
        """Abort the running turn; the prompt is usable again at once."""
        if not self.running or self.agent is None:
            return False
        self.agent.abort()
        self._aborted_seq = self._run_seq
        self._mark_interrupted()
        self._end_run()
        if self.queue:
            # Queued prompts go back to the editor: after an interrupt the user decides.
            queued = "\n\n".join(self.queue)
            self.queue.clear()
            if not self.prompt.text.strip():
                self.prompt.set_text(queued)
        self.prompt.focus()
        return True

    def action_interrupt(self) -> None:
        self.interrupt()

    def action_ctrl_c(self) -> None:
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            self.activity.show_hint("copied")
            return
        if self.prompt.selected_text:
            self.copy_to_clipboard(self.prompt.selected_text)
            self.activity.show_hint("copied")
            return
        if self.interrupt():
            return
        now = time.monotonic()
        if now - self._ctrl_c_at < 2.0:
            self.action_quit_now()
            return
        self._ctrl_c_at = now
        self.activity.show_hint("press Ctrl+C again to quit", 2.0)

    def action_quit_now(self) -> None:
        if self.running and self.agent is not None:
            self.agent.abort()
        self.exit(0)


    def action_cycle_mode(self) -> None:
        permissions = getattr(self.agent, "permissions", None)
        if permissions is None:
            return
        modes = [m for m in PERMISSION_MODES if m != "bypass" or self._bypass_allowed]
        self._set_mode(next_mode(self._mode(), modes))

    def _set_mode(self, mode: str) -> bool:
        permissions = getattr(self.agent, "permissions", None)
        if permissions is None:
            return False
        try:
            permissions.mode = mode
        except (ValueError, TypeError) as error:
            self.transcript.add_notice(f"✗ {error}", "error")
            return False
        self._set_status(mode=self._mode())
        return True

    def action_toggle_tool_output(self) -> None:
        self.transcript.set_expand_tools(not self.transcript.expand_tools)

    # --- slash commands ---------------------------------------------------------------

    def _output(self, text: str) -> None:
        self.transcript.add_notice(text, "output")
        self.transcript.follow()

    async def run_command(self, name: str, arg: str) -> None:
        if name in ("exit", "quit"):
            self.action_quit_now()
            return
        if name == "help":
            self._output(help_text())
            return
        if self.agent is None:
            self._output(self.agent_error and f"the agent is not available: {self.agent_error}"
                         or "the agent is still loading; try again in a moment")
            return
        busy = self.running or self._worker_active
        if name == "cost":
            self._output(cost_text(self._status, getattr(self.agent, "metrics", None)))
        elif name == "model":
            if not arg:
                self._output(f"model: {self._model()}")
            elif busy:
                self._output("wait for the current run to end (or press Esc) before switching models")
            else:
                self.agent.set_model(arg)
                self._set_status(model=self._model())
                self._refresh_context()
                self._output(f"model switched to {self._model()}")
        elif name == "mode":
            if not arg:
                self._output(f"permission mode: {self._mode()}  (modes: {', '.join(PERMISSION_MODES)})")
            elif arg not in PERMISSION_MODES:
                self._output(f"unknown mode {arg!r}; choose one of {', '.join(PERMISSION_MODES)}")
            else:
                if arg == "bypass":
                    self._bypass_allowed = True
                if self._set_mode(arg):
                    self._output(f"permission mode: {self._mode()}")
        elif name == "permissions":
            self._output(permissions_text(getattr(self.agent, "permissions", None)))
        elif name == "skills":
            self._output(skills_text(getattr(self.agent, "skills", None)))
        elif name == "compact":
            if busy:
                self._output("wait for the current run to end before compacting")
                return
            agent = self.agent
            focus = arg or None
            self._output("compacting the conversation…" + (f" (focus: {focus})" if focus else ""))
            self._compact_reported = False
            self._start_run(lambda: agent.compact(focus), phase="compacting")
            self._compact_seq = self._run_seq
        elif name == "clear":
            if busy:
                self.interrupt()
            await self._new_agent(replace(self.options, continue_session=False, resume_id=None),
                                  "new session started")
        elif name == "resume":
            await self._resume(arg)
        else:
            self._output(f"unknown command /{name} · /help lists the commands")

    def _close_session(self) -> None:
        session = getattr(self.agent, "session", None)
        close = getattr(session, "close", None)
        if callable(close):
            close()

    async def _close_provider(self) -> None:
        close = getattr(self.agent, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:  # noqa: BLE001 - a failed close must not block quitting or switching
                pass

    async def on_unmount(self) -> None:
        # The provider's connections belong to this event loop, which ends with the app.
        # (A run cut short by quitting still owns its stream; the process exit ends it.)
        if not self.running and not self._worker_active:
            await self._close_provider()

    async def _new_agent(self, options: TuiOptions, announce: str) -> None:
        # An interrupted run still closes its turn in the old session; let it finish.
        for _ in range(500):
            if not self._worker_active:
                break
            await asyncio.sleep(0.01)
        self._close_session()
        await self._close_provider()
        await self.transcript.clear()
        self.todos.set_todos(())
        self._tool_blocks.clear()
        self._status = StatusInfo(model=self._model(), mode=self._mode())
        self.agent = None
        self._history_shown = -1
        self.loaded.clear()
        self._set_status(note="loading…")
        await self._load_agent(options, announce=announce)

    async def _resume(self, session_id: str) -> None:
        if self.running or self._worker_active:
            self._output("wait for the current run to end before resuming another session")
            return
        if not session_id:
            lister = self.options.session_lister or default_session_lister
            root = getattr(getattr(self.agent, "workspace", None), "root", self.options.workspace)
            try:
                sessions = await asyncio.to_thread(lister, Path(root))
            except Exception as error:  # noqa: BLE001
                self._output(f"cannot list sessions: {error}")
                return
            current = getattr(self.agent, "session_id", None)
            sessions = [s for s in sessions if getattr(s, "id", None) != current]
            if not sessions:
                self._output("no earlier sessions in this workspace")
                return
            self.push_screen(SessionPicker(sessions), callback=self._picked_session)
            return
        await self._new_agent(replace(self.options, resume_id=session_id, continue_session=False), "")

    def _picked_session(self, session_id: str | None) -> None:
        if session_id:
            self.run_worker(self._new_agent(replace(self.options, resume_id=session_id, continue_session=False),
                                            ""), group="agent", exit_on_error=False)


def run_tui(options: TuiOptions) -> int:
    """Run the full-screen app until the user quits; the process exit code."""
    app = LoomApp(options)
    result = app.run()
    if app.return_code:
        return app.return_code  # Textual already printed the crash
    return int(result or 0)
