"""The run view: turns the engine's events into transcript widgets.

One `match` per path reads the typed events: the main agent's events become answer
segments, thinking blocks, tool blocks and notices in the transcript; a sub-agent's
events go inside the block of the `task` call that started it. What is not about
widgets (usage in the status bar, asking for permission, ending the run) goes to the
app through the small `RunHost` interface.
"""

from __future__ import annotations

import time
from typing import Protocol, assert_never

from textual.message import Message as TextualMessage

from loom_engine.events import (
    Aborted,
    AgentEvent,
    AssistantMessage,
    BudgetExceeded,
    CompactionApplied,
    Error,
    Finished,
    HookRan,
    MaxTurnsReached,
    Notice,
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
    UsageLimitWait,
    UsageUpdated,
    is_event,
)
from loom_engine.permissions.answer import PermissionAnswer

from ..stop_reason import INTERRUPTED_BY_USER, cut_off, retry_status, stop_reason
from ..usage_limits import wait_line, wait_notice
from ..wording import HELD_PROPOSALS_NOTICE, compaction_notice
from .markdown_stream import MarkdownStream
from .todo_panel import TodoPanel
from .tool_block import SPINNER, ToolBlock, ToolCallData
from .transcript import ThinkingBlock, Transcript


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


class RunHost(Protocol):
    """What the run view asks of the app."""

    def count_usage(self, event: UsageUpdated) -> None: ...

    def refresh_context(self) -> None: ...

    def request_started(self) -> None:
        """The main agent's next request is on its way (the status bar may estimate it)."""
        ...

    def changes_workspace(self, tool_name: str) -> bool:
        """Whether a call of this tool may have changed files (then the context estimate
        in the status bar is worth refreshing); the tool's own declaration says."""
        ...

    def ask_permission(self, request: PermissionRequested) -> None: ...

    def end_run(self) -> None: ...

    def memory_held(self) -> bool:
        """Whether facts read before a compaction wait to be offered for memory."""
        ...


class RunView:
    """The widgets of the run in progress, and what the activity line says it is doing."""

    def __init__(self, transcript: Transcript, todos: TodoPanel, host: RunHost, *, max_fps: float) -> None:
        self.transcript = transcript
        self.todos = todos
        self.host = host
        self.max_fps = max_fps
        self.phase = ""  # "waiting for the model", "thinking", "writing", "running bash", ...
        # A compaction result or an error was shown: a /compact that shows neither says
        # "nothing to compact" itself.
        self.result_shown = False
        self._answer: MarkdownStream | None = None  # the text segment streaming now
        self._thinking: ThinkingBlock | None = None
        self._tool_blocks: dict[str, ToolBlock] = {}  # call id -> block, sub-agents' included
        self._subagent_answers: dict[str, MarkdownStream] = {}  # agent id -> its streaming text
        # The retry being waited for (its event and when it starts, time.monotonic()):
        # one line in the activity line, updated in place, rather than a line per retry.
        self._retry: tuple[Retrying, float] | None = None
        self._attempts = 0  # how often the failing request was tried, once retried
        # The usage limit being waited for: a countdown in the activity line until the
        # agent's next event.
        self._limit_wait: UsageLimitWait | None = None

    # --- the run's life ---------------------------------------------------------------

    def start(self, phase: str) -> None:
        self.phase = phase
        self._retry = None
        self._limit_wait = None
        self._attempts = 0
        self.result_shown = False
        self._answer = None
        self._thinking = None

    def activity(self, frame: int, elapsed_s: float) -> str:
        """The activity line while the run goes (``frame`` turns the spinner)."""
        # A wait for a usage limit, or a retry, takes the line: one line, updated in place.
        if self._limit_wait is not None:
            return f"⏸ {wait_line(self._limit_wait, time.time(), live=True)} · esc to stop waiting"
        retry = self.retry_status()
        if retry:
            return f"{retry} · esc to interrupt"
        return f"{SPINNER[frame % len(SPINNER)]} {self.phase or 'working'} · {elapsed_s:.0f}s · esc to interrupt"

    def retry_status(self) -> str:
        """The line that stands for a retry while one is waited for, else ''."""
        if self._retry is None:
            return ""
        event, at = self._retry
        return retry_status(event, at - time.monotonic())

    def _answer_arrived(self) -> None:
        """Output of a (re)tried request arrived: the retry worked."""
        self._retry = None
        self._attempts = 0

    def finish(self) -> None:
        """The run ended: everything still streaming goes static."""
        self.phase = ""
        self._retry = None
        self._limit_wait = None
        self._finish_answer()
        self._finish_thinking()
        for stream in self._subagent_answers.values():
            stream.finish()
        self._subagent_answers.clear()

    def mark_interrupted(self, reason: str = INTERRUPTED_BY_USER) -> None:
        if self._answer is not None:
            self.transcript.mark_interrupted(self._answer)
        self._finish_answer()
        for block in self._tool_blocks.values():
            if block.running:
                block.set_status("interrupted")
        self.transcript.add_notice(f"⏹ {reason}", "warning")

    def forget_tools(self) -> None:
        """A new session: the old blocks are gone from the transcript."""
        self._tool_blocks.clear()

    def tick(self) -> None:
        for block in self._tool_blocks.values():
            block.tick()

    def show_permission_answer(self, request: PermissionRequested, answer: PermissionAnswer) -> None:
        """The user answered in the modal: the block shows it before the engine says so."""
        block = self._tool_blocks.get(request.call_id)
        if block is not None and block.data.status == "waiting":
            if answer.decision == "deny":
                block.set_status("denied", note=answer.note or "")
            else:
                block.set_status("running")
        self.phase = f"running {request.tool}" if answer.allowed else "waiting for the model"

    # --- events -----------------------------------------------------------------------

    def show(self, event: AgentEvent, *, stale: bool = False) -> None:
        """Show one event; ``stale`` events belong to a run the user already stopped."""
        if not is_event(event):  # not one of the engine's kinds: nothing to draw
            return
        if isinstance(event, UsageUpdated):
            self.host.count_usage(event)  # a stopped run's tokens were still paid for
            return
        if event.depth > 0 and event.parent_tool_use_id:
            if not stale:
                self._show_subagent(event)
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
        self._limit_wait = None  # the wait is over once anything else happens
        match event:
            case TurnStarted():
                self.phase = "waiting for the model"
                self.host.request_started()
            case TextDelta():
                self._answer_arrived()
                self.phase = "writing"
                self._streaming_answer().append(event.text)
            case ThinkingDelta():
                self._answer_arrived()
                self.phase = "thinking"
                if self._thinking is None:
                    self._finish_answer()
                    self._thinking = self.transcript.start_thinking()
                self._thinking.append(event.text)
            case AssistantMessage():
                self._answer_arrived()
                self._finish_answer()
                self._finish_thinking()
            case ToolCallStarted():
                # A new text segment starts after every tool call: finished segments stay static.
                self._answer_arrived()
                self._finish_answer()
                self.phase = f"running {event.name}"
                data = ToolCallData(call_id=event.call_id, name=event.name, input=dict(event.input),
                                    started=time.monotonic())
                self._tool_blocks[event.call_id] = self.transcript.add_tool(data)
            case ToolProgress() | ToolFinished() | PermissionRequested() | PermissionAnswered():
                self._show_tool_event(event)
            case TodosUpdated():
                self.todos.set_todos(event.todos)
            case CompactionApplied():
                self.result_shown = True
                self.transcript.add_notice(compaction_notice(event.reason, event.method, event.tokens_before,
                                                             event.tokens_after), "info")
                if self.host.memory_held():
                    self.transcript.add_notice(HELD_PROPOSALS_NOTICE, "info")
                self.host.refresh_context()
            case Retrying():
                if event.discard_partial and self._answer is not None:
                    self._answer.reset()
                self._retry = (event, time.monotonic() + event.delay_s)
                self._attempts = event.attempt + 1
            case UsageLimitWait():
                self._retry = None
                self._limit_wait = event
                if event.attempt == 1:
                    self.transcript.add_notice(wait_notice(event, time.time()), "warning")
            case Notice():
                self.transcript.add_notice(event.message, "warning" if event.level == "warning" else "info")
            case Finished():
                if event.cut_off:
                    self.transcript.add_notice(f"✂ {cut_off(event)} · /continue goes on", "warning")
                self.host.end_run()
            case Aborted():
                self.mark_interrupted(stop_reason(event))
                self.host.end_run()
            case Error():
                self.result_shown = True
                self._retry = None
                self.transcript.add_notice(f"✗ {stop_reason(event, attempts=self._attempts)}", "error")
                self.host.end_run()
            case MaxTurnsReached() | BudgetExceeded():
                self.transcript.add_notice(stop_reason(event), "warning")
                self.host.end_run()
            case HookRan():
                pass  # the app draws a hook's run (hook_view.show_hook_ran) before events reach here
            case _:
                assert_never(event)

    def _show_subagent(self, event: AgentEvent) -> None:
        """A sub-agent's event, drawn inside the block of the task call that started it."""
        parent = self._tool_blocks.get(event.parent_tool_use_id or "")
        if parent is None:
            return
        key = event.agent_id or event.parent_tool_use_id or ""
        if isinstance(event, (TextDelta, ThinkingDelta, ToolCallStarted, AssistantMessage, Finished, Aborted,
                              Error)) and self._retry is not None and self._retry[0].depth > 0:
            self._retry = None  # the sub-agent's retry worked, or it gave up
        if not isinstance(event, UsageLimitWait) and self._limit_wait is not None and self._limit_wait.depth > 0:
            self._limit_wait = None
        if isinstance(event, (ToolCallStarted, AssistantMessage, Finished, Aborted, Error)):
            stream = self._subagent_answers.pop(key, None)
            if stream is not None:
                stream.finish()
        match event:
            case TextDelta():
                stream = self._subagent_answers.get(key)
                if stream is None:
                    stream = MarkdownStream(classes="subagent-text", max_fps=self.max_fps)
                    self._subagent_answers[key] = stream
                    parent.subagent_box().mount(stream)
                stream.append(event.text)
            case ToolCallStarted():
                block = ToolBlock(ToolCallData(call_id=event.call_id, name=event.name, input=dict(event.input),
                                               depth=event.depth, started=time.monotonic()))
                self._tool_blocks[event.call_id] = block
                parent.subagent_box().mount(block)
            case ToolProgress() | ToolFinished() | PermissionRequested() | PermissionAnswered():
                self._show_tool_event(event)
            case Notice():
                self.transcript.add_notice(f"  ↳ {event.message}", "warning")
            case Retrying():
                # The sub-agent's retry shows in the activity line like the main agent's.
                self._retry = (event, time.monotonic() + event.delay_s)
            case UsageLimitWait():
                self._limit_wait = event  # a sub-agent's wait too
            case Error():
                self.transcript.add_notice(f"  ↳ sub-agent error: {stop_reason(event)}", "error")

    # --- shared by both paths ---------------------------------------------------------

    def _show_tool_event(self, event: ToolProgress | ToolFinished | PermissionRequested | PermissionAnswered) -> None:
        """A call's output, result and permission: drawn alike for the main agent and sub-agents."""
        block = self._tool_blocks.get(event.call_id)
        match event:
            case ToolProgress():
                if block is not None:
                    block.add_live_output(event.text)
            case ToolFinished():
                if block is not None:
                    block.finish(content=event.content, is_error=event.is_error, duration_ms=event.duration_ms,
                                 display=event.display)
                if self.host.changes_workspace(event.name):
                    self.host.refresh_context()
                self.phase = "waiting for the model"
            case PermissionRequested():
                self.phase = "waiting for your approval"
                if block is not None:
                    block.set_status("waiting")
                self.host.ask_permission(event)
            case PermissionAnswered():
                if block is None:
                    return
                if event.decision == "deny":
                    block.set_status("denied", note=event.note or "")
                elif block.data.status == "waiting":
                    block.set_status("running")
            case _:
                assert_never(event)

    # --- the streaming answer ---------------------------------------------------------

    def _streaming_answer(self) -> MarkdownStream:
        if self._answer is None:
            self._finish_thinking()
            self._answer = self.transcript.start_assistant()
        return self._answer

    def _finish_answer(self) -> None:
        if self._answer is not None:
            self._answer.finish()
            self._answer = None

    def _finish_thinking(self) -> None:
        if self._thinking is not None:
            self._thinking.finish()
            self._thinking = None
