"""The `loom` Textual app: it composes the chat's widgets and routes keys and messages;
its `TurnFlow` runs one turn at a time.

The engine runs as a Textual worker on the UI's own event loop (`RunDriver`): each
engine event is posted as a Textual message and handed to the `RunView`, which turns it
into widgets; Esc/Ctrl+C call `agent.abort()`; a permission request waits in the
`PermissionQueue` and its answer goes back with `agent.answer_permission()`. Prompts
sent during a run wait in the `PromptQueue`. Starting, ending and interrupting the runs,
and answering a permission question, is `TurnFlow`'s; the agent's start-up, building and
replacing is `AgentLifecycle`'s; Ctrl+C/Ctrl+D are `CtrlKeys`'. Slash commands live in
`commands/` and act through this app's public surface (`ChatHost`).

First frame first: this module imports neither the provider SDKs nor the agent. The
agent is built by `TuiOptions.agent_factory` in a thread after the first frame, and
`import anthropic` (about a second) starts in another thread at the first frame, so it
happens while the user already sees the UI and types, and never on the UI's loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import TextArea

from loom_engine.events import HookRan, PermissionRequested, UsageUpdated
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.modes import next_mode
from loom_engine.workspace import find_workspace_root

from ..slash_commands import parse_command
from .agent_lifecycle import AgentLifecycle
from .commands.custom import CustomCommandMenu
from .commands.registry import BUILTIN_NAMES, REGISTRY, run_command
from .commands.rewind import rewind_command
from .completion import list_workspace_files
from .ctrl_keys import CtrlKeys
from .exit_summary import print_exit_summary
from .first_run import first_start, not_sent_line
from .history_search import HistorySearch
from .hook_view import show_hook_ran
from .key_hold import KeyHold
from .mcp_chat import prompt_commands, resource_mentions_of
from .memory import MemorySettler
from .options import TuiOptions, close_mcp, close_provider, data_dir_of, start_provider_import
from .paste import Draft
from .permission_prompt import PermissionPrompt
from .permission_queue import PermissionQueue
from .prompt_input import CompletionMenu, PromptHistory, PromptInput, history_file
from .prompt_queue import PromptQueue
from .queue_view import QueueView
from .run_driver import RunDriver
from .run_view import EngineEvent, RunEnded, RunView
from .safe_text import SafeTextApp
from .status_bar import ActivityLine, RunClock, StatusBar, StatusInfo
from .todo_panel import TodoPanel
from .transcript import Transcript
from .trust_screen import settle_trust
from .turn_flow import TurnFlow
from .user_turns import show_prompt_mode

if TYPE_CHECKING:
    from ..chat_agent import ChatAgent
    from .commands.rewind_undo import RewindUndo

__all__ = ["LoomApp", "TuiOptions", "run_tui"]

# How long replacing the agent waits for an interrupted run to close its turn.
RUN_CLOSE_TIMEOUT_S = 5.0


class LoomApp(SafeTextApp[int]):
    """The chat.

    ``agent`` is a `ChatAgent` (loom_cli.chat_agent): an `Agent`, or a test's double.
    """

    TITLE = "Loom"
    # The very first start shows a welcome once the agent is known (set by run_tui).
    show_welcome = False
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
        Binding("ctrl+r", "history_search", "search prompt history", show=False),
        Binding("ctrl+g", "edit_in_editor", "edit the prompt in $EDITOR", show=False),
    ]

    # The widgets, made in compose(). Kept as attributes: queries run against the active
    # screen, which may be a modal (the trust question, /resume, /permissions).
    transcript: Transcript
    todos: TodoPanel
    activity: ActivityLine
    prompt: PromptInput
    queue_view: QueueView
    history_search: HistorySearch
    permission_prompt: PermissionPrompt
    status_bar: StatusBar
    run_view: RunView

    def __init__(self, options: TuiOptions) -> None:
        super().__init__()
        self.options = options
        self.agent: ChatAgent | None = None
        self.agent_error: str | None = None
        self.prompt_queue = PromptQueue(lambda: self.queue_view, lambda: self.prompt)
        self.running = False  # a run the UI is showing (false at once after Esc)
        self.runs = RunDriver(lambda work: self.run_worker(work, group="run", exit_on_error=False),
                              self.post_message)
        self.memory = MemorySettler()
        self.clock = RunClock()
        self.ctrl_keys = CtrlKeys(self)
        # What the session's end kept in memory, printed after the chat closes; None: not asked yet.
        self.memory_said: str | None = None
        self._files: list[str] | None = None
        self._frame = 0
        self.bypass_allowed = options.permission_mode == "bypass"
        self.loaded = asyncio.Event()
        self.warm = asyncio.Event()  # highlighting lexers imported (for benchmarks)
        self.answers: list[tuple[str, PermissionAnswer | None]] = []
        self.last_rewind: RewindUndo | None = None  # what /rewind can undo
        self.key_hold = KeyHold()
        self.first_frame_at: float | None = None
        self.lifecycle = AgentLifecycle(self, lambda options: settle_trust(self, options))
        self.workspace_root = find_workspace_root(options.workspace)
        self.history = PromptHistory(history_file(data_dir_of(options), self.workspace_root))
        self.turns = TurnFlow(self)
        self.permission_queue = PermissionQueue(lambda: self.permission_prompt, guard_s=options.permission_guard_s,
                                                on_answer=self.turns.permission_answered,
                                                on_open=self.turns.question_opened, on_close=self.turns.question_closed)

    # --- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        menu = CompletionMenu(id="completion")
        self.transcript = Transcript(max_mounted=self.options.max_mounted_blocks, max_fps=self.options.max_fps,
                                     id="transcript")
        self.todos = TodoPanel(id="todos")
        self.activity = ActivityLine(id="activity")
        custom = CustomCommandMenu(self.workspace_root, BUILTIN_NAMES)  # the user's commands and skills
        self.prompt = PromptInput(history=self.history, menu=menu, commands=REGISTRY.menu_entries(),
                                  files=self._file_list, take_queued=self.prompt_queue.take_last, id="prompt",
                                  more_commands=lambda: [*prompt_commands(self.agent), *custom.entries(self.agent)],
                                  resources=lambda: resource_mentions_of(self.agent))
        self.queue_view = QueueView(id="queue")
        self.history_search = HistorySearch(id="history-search")
        # The permission question takes the input box's place while it is open.
        self.permission_prompt = PermissionPrompt(scroll_transcript=self.transcript.scroll_pages, id="permission")
        self.status_bar = StatusBar(StatusInfo(mode=self.options.permission_mode or ""), id="status")
        self.run_view = RunView(self.transcript, self.todos, self, max_fps=self.options.max_fps)
        yield self.transcript
        yield self.todos
        yield self.activity
        yield self.queue_view
        yield menu
        yield self.history_search
        yield self.permission_prompt
        yield self.prompt
        yield self.status_bar

    def on_mount(self) -> None:
        self.prompt.focus()
        if not self.show_welcome:  # the welcome comes once the provider is known
            self.transcript.add_notice(f"Loom · {self.workspace_root.name or self.workspace_root}"
                                       " · /help for commands · Esc interrupts · Ctrl+D quits", "info")
        self.status_bar.change(note="loading…")
        self.set_interval(0.1, self._tick)
        self.call_after_refresh(self._first_frame)

    def _first_frame(self) -> None:
        self.first_frame_at = time.perf_counter()
        # Only now start the heavy work: an import thread competes for the GIL and
        # would delay the first paint.
        start_provider_import(self.options)  # never on this loop: it would freeze the first prompt
        self.run_worker(self.lifecycle.start(), group="agent", exit_on_error=False)
        self.run_worker(self._load_files(), group="files", exit_on_error=False)

    async def _load_files(self) -> None:
        self._files = await asyncio.to_thread(list_workspace_files, self.workspace_root)
        self.prompt.refresh_completion()

    def _file_list(self) -> Sequence[str] | None:
        return self._files

    async def on_unmount(self) -> None:
        # The provider's connections belong to this event loop, which ends with the app.
        # (A run cut short by quitting still owns its stream; the process exit ends it.)
        await self.lifecycle.session_hooks(self.agent, "session_ended", "prompt_input_exit", show=False)
        if not self.busy:
            await close_provider(self.agent)
        await close_mcp(self.agent)  # the MCP servers Loom started end with it

    # --- the agent's life (what `AgentLifecycle` asks of the app) ---------------------

    async def replace_agent(self, options: TuiOptions, announce: str) -> None:
        """A new session (/clear) or another one (/resume): the old agent closes first."""
        await self.lifecycle.replace(options, announce)

    async def wait_for_run_to_close(self) -> None:
        await self.runs.wait_closed(RUN_CLOSE_TIMEOUT_S)

    async def clear_session_view(self) -> None:
        await self.transcript.clear()
        self.todos.set_todos(())
        self.run_view.forget_tools()
        self.status_bar.set_info(StatusInfo(model=self.model, mode=self.mode))

    # --- what commands read and change ------------------------------------------------

    @property
    def model(self) -> str:
        return (self.agent.config.model if self.agent is not None else "") or self.options.model or ""

    @property
    def mode(self) -> str:
        permissions = self.agent.permissions if self.agent is not None else None
        return permissions.mode if permissions is not None else (self.options.permission_mode or "default")

    @property
    def queue(self) -> deque[Draft]:
        """The prompts waiting for the agent, oldest first."""
        return self.prompt_queue.drafts

    @property
    def history_loaded_at(self) -> float | None:
        return self.lifecycle.history_loaded_at

    @property
    def history_shown_at(self) -> float | None:
        return self.lifecycle.history_shown_at

    @property
    def status(self) -> StatusInfo:
        return self.status_bar.info

    @property
    def busy(self) -> bool:
        """A run is shown or its engine task is still closing."""
        return self.running or self.runs.active

    def output(self, text: str) -> None:
        """A command's answer, in the transcript."""
        self.transcript.add_notice(text, "output")
        self.transcript.follow()

    def switch_model(self, model: str) -> None:
        if self.agent is None:
            return
        self.agent.choose_model(model)  # saved with the session: a resume keeps it
        self.status_bar.change(model=self.model)
        self.refresh_context()

    def set_mode(self, mode: str) -> bool:
        permissions = self.agent.permissions if self.agent is not None else None
        if permissions is None:
            return False
        try:
            permissions.mode = mode  # type: ignore[assignment]  # the manager checks the name
        except (ValueError, TypeError) as error:
            self.transcript.add_notice(f"✗ {error}", "error")
            return False
        self.status_bar.change(mode=self.mode)
        return True

    def compact(self, focus: str | None) -> None:
        """Summarise the conversation now, as a run of its own."""
        agent = self.agent
        if agent is None:
            return
        self.turns.start(lambda: agent.compact(focus), phase="compacting", compact=True)

    # --- what the run view asks (`RunHost`), and the activity line --------------------

    def refresh_context(self) -> None:
        if self.agent is None:
            return
        try:
            used, window = self.agent.context_usage()
        except Exception:  # a token estimate must never break the UI
            return
        self.status_bar.change(context_used=int(used), context_window=int(window))

    def request_started(self) -> None:
        """Until the provider reports the first usage, the bar shows what this request
        sends, estimated (``↑~6.6k``): a long first request would otherwise read ``↑0``."""
        if self.agent is None or self.status.usage.prompt_tokens:
            return
        try:
            used, window = self.agent.context_usage()
        except Exception:  # a token estimate must never break the UI
            return
        self.status_bar.change(sending_estimate=int(used), context_used=int(used), context_window=int(window))

    def changes_workspace(self, tool_name: str) -> bool:
        tool = self.agent.registry.get(tool_name) if self.agent is not None else None
        if tool is None:
            return False
        from loom_engine.tools.base import changes_workspace  # loaded by now: a tool just ran

        return changes_workspace(tool)

    def count_usage(self, event: UsageUpdated) -> None:
        info = self.status.with_usage(event.usage, event.cost_usd)
        if event.depth == 0 and event.context_window:
            info = replace(info, context_used=event.context_tokens, context_window=event.context_window)
        self.status_bar.set_info(info)

    def _tick(self) -> None:
        self._frame += 1
        if self.running:
            self.run_view.tick()
            message = self.run_view.activity(self._frame, self.clock.elapsed)
        elif self.agent is None and self.agent_error is None:
            message = "loading the agent…"
        else:
            message = ""
        if self.queue:
            message += f"{' · ' if message else ''}{len(self.queue)} queued"
        self.activity.show(message)

    # --- submitting and running -------------------------------------------------------

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is self.prompt:
            show_prompt_mode(self.prompt, self.prompt.text)

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        await self.submit(message.draft)

    async def submit(self, prompt: str | Draft) -> None:
        self.lifecycle.cancel_idle_notification()
        draft = prompt if isinstance(prompt, Draft) else Draft(prompt)
        command = parse_command(draft.expanded)
        if command is not None:
            await run_command(self, command)
            return
        if self.agent is None and self.agent_error is not None:
            # No agent will come to take it: the text stays where the user can keep it.
            if not self.prompt.text.strip():
                self.prompt.set_draft(draft)
            self.transcript.add_notice(not_sent_line(self.agent_error), "error")
            self.transcript.follow()
            return
        self.prompt_queue.add(draft)
        self.send_queued()

    def send_queued(self) -> None:
        """The oldest queued prompt goes to the agent, if it is there and free."""
        self.turns.send_queued()

    def on_engine_event(self, message: EngineEvent) -> None:
        match message.event:
            case HookRan() as ran:  # a notice when a hook blocks or fails; its time in the call's block
                show_hook_ran(self.transcript, ran, stale=self.runs.is_stale(message.run_seq))
            case event:
                self.run_view.show(event, stale=self.runs.is_stale(message.run_seq))

    def on_run_ended(self, message: RunEnded) -> None:
        self.turns.run_ended(message.run_seq)

    def end_run(self) -> None:
        if self.options.manage_gc:
            self.set_timer(0.5, self._settle_memory)
        self.running = False
        self.run_view.finish()
        self.permission_queue.clear()
        self.status_bar.change(sending_estimate=0)  # no usage came (a failed request): nothing to estimate
        self.refresh_context()
        self.lifecycle.arm_idle_notification()

    def _settle_memory(self) -> None:
        if not self.running:  # a run started meanwhile: its objects are not settled yet
            self.memory.settle()

    # --- permissions ------------------------------------------------------------------

    def ask_permission(self, request: PermissionRequested) -> None:
        self.permission_queue.ask(request)

    # --- keys -------------------------------------------------------------------------

    def interrupt(self, reason: str | None = None) -> bool:
        """Abort the running turn; the prompt is usable again at once."""
        return self.turns.interrupt(reason)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:  # as it arrives, before anyone acts on it
            if self.key_hold.drops(event):
                return  # pressed while the rewind list was on its way: meant for neither it nor the prompt
            if event.key == "escape" and self.ctrl_keys.esc_twice(event.time):
                rewind_command(self)  # Esc Esc while idle, nothing typed
                return
        await super().on_event(event)

    def memory_held(self) -> bool:
        return self.lifecycle.promoter is not None and self.lifecycle.promoter.holds

    def action_interrupt(self) -> None:
        self.interrupt()

    def action_ctrl_c(self) -> None:
        self.ctrl_keys.ctrl_c()

    def action_quit_now(self) -> None:
        promoter = self.lifecycle.promoter
        if self.memory_said is None and not self.running and promoter is not None \
                and self.agent is not None and (self.agent.messages or promoter.holds):
            # [memory] promote: ask what to keep first (a second Ctrl+D meanwhile quits at once).
            self.memory_said = ""
            self.run_worker(self._remember_then_quit(), group="memory", exit_on_error=False)
            return
        self.ctrl_keys.ctrl_d()

    async def _remember_then_quit(self) -> None:
        from .commands.memory import offer_proposals

        self.memory_said = await offer_proposals(self)
        self.exit(0)

    def action_cycle_mode(self) -> None:
        if self.agent is None or self.agent.permissions is None:
            return
        self.set_mode(next_mode(self.mode, include_bypass=self.bypass_allowed))

    def action_toggle_tool_output(self) -> None:
        self.transcript.set_expand_tools(not self.transcript.expand_tools)

    def action_history_search(self) -> None:
        if self.history_search.is_open:
            self.history_search.older()
        else:
            self.history_search.open(self.history.entries)

    def on_history_search_picked(self, message: HistorySearch.Picked) -> None:
        if message.text is not None:
            self.prompt.set_text(message.text)
        self.prompt.focus()

    def action_edit_in_editor(self) -> None:
        from .external_editor import edit_prompt

        edit_prompt(self, self.prompt, lambda error: self.transcript.add_notice(error, "error"))


def run_tui(options: TuiOptions) -> int:
    """Run the full-screen app until the user quits; the process exit code."""
    app = LoomApp(options)
    app.show_welcome = first_start(data_dir_of(options))
    result = app.run()
    if app.return_code:
        return app.return_code  # Textual already printed the crash
    print_exit_summary(app.agent, app.agent_error)
    if app.memory_said:
        print(app.memory_said)
    elif app.lifecycle.promoter is not None and app.lifecycle.promoter.unanswered_file is not None:
        print("memory proposals not answered: review them with loom memory proposals")
    return int(result or 0)
