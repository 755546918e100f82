"""One turn at a time: a queued prompt (or /compact) starts a run, the run ends or is
interrupted, and what was not sent comes back to the input box.

A permission question belongs to the turn that asked it: while it is open the run's
clock stands still and the input box makes way; the answer goes to the agent, and "no,
and stop" ends the turn like Esc does. The app holds a `TurnFlow` and routes the run's
messages and the keys to it; the widgets, the clock and the run's state stay the app's
(`TurnHost`), which the rest of the chat reads too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from loom_engine.events import PermissionRequested
from loom_engine.permissions.answer import PermissionAnswer

from .first_run import unsent_line
from .permission_prompt import STOPPED_NOTE, PromptReply
from .prompt_input import PromptInput
from .prompt_queue import PromptQueue
from .run_driver import RunDriver, StreamFactory
from .run_view import RunView
from .status_bar import RunClock
from .transcript import Transcript
from .user_turns import user_turn

if TYPE_CHECKING:
    from ..chat_agent import ChatAgent
    from .agent_lifecycle import AgentLifecycle


class TurnHost(Protocol):
    """What the turns read and change in the app."""

    running: bool  # a run the UI is showing (false at once after Esc)
    answers: list[tuple[str, PermissionAnswer | None]]  # each permission question's answer, in order
    clock: RunClock
    runs: RunDriver
    run_view: RunView
    prompt_queue: PromptQueue
    transcript: Transcript
    prompt: PromptInput
    lifecycle: AgentLifecycle

    @property
    def agent(self) -> ChatAgent | None: ...

    def end_run(self) -> None:
        """The screen of a run that ended: the prompt, the status bar and the questions settled."""
        ...

    def set_mode(self, mode: str) -> bool: ...


class TurnFlow:
    def __init__(self, host: TurnHost) -> None:
        self.host = host

    # --- starting and ending runs -----------------------------------------------------

    def send_queued(self) -> None:
        """The oldest queued prompt goes to the agent, if it is there and free."""
        host = self.host
        if host.runs.active or host.agent is None:
            return
        draft = host.prompt_queue.next()
        if draft is None:
            return
        prompt = draft.expanded
        host.transcript.add_user(prompt, draft.text)
        host.transcript.follow()
        agent = host.agent
        self.start(lambda: user_turn(agent, prompt))  # `!command`, or a run with its @-attachments

    def start(self, make_stream: StreamFactory, phase: str = "waiting for the model", *,
              compact: bool = False) -> None:
        host = self.host
        host.running = True
        host.clock.start()
        host.run_view.start(phase)
        host.runs.start(make_stream, compact=compact)

    def run_ended(self, run_seq: int) -> None:
        host = self.host
        if not host.runs.ended(run_seq):
            return
        if host.runs.was_compaction(run_seq) and not host.run_view.result_shown:
            host.transcript.add_notice("nothing to compact yet: the conversation is short", "info")
        if host.running:
            host.end_run()
        host.lifecycle.show_snapshot_notices()  # the run's snapshots were tried by now
        self._give_back_unsent()
        self.send_queued()

    def _give_back_unsent(self) -> None:
        """A prompt whose request failed before any answer goes back into the input."""
        host = self.host
        unsent = host.agent.take_unsent_prompt() if host.agent is not None else None
        if unsent is None:
            return
        # Like after an interrupt: what was waiting comes back too, the user decides.
        host.prompt_queue.give_back(host.prompt_queue.unsent(unsent.text))
        host.transcript.add_notice(unsent_line(unsent.error), "warning")
        host.prompt.focus()

    def interrupt(self, reason: str | None = None, refused: PermissionRequested | None = None) -> bool:
        """Abort the running turn (``refused``: in saying no to this question); the
        prompt is usable again at once."""
        host = self.host
        if not host.running or host.agent is None:
            return False
        if refused is not None:
            host.agent.refuse_and_stop(refused.request_id, refused.call_id)
        else:
            host.agent.abort()
        host.runs.aborted()
        host.run_view.mark_interrupted(*(() if reason is None else (reason,)))
        host.end_run()
        host.prompt_queue.give_back()  # after an interrupt the user decides what to send
        host.prompt.focus()
        return True

    # --- permission questions ---------------------------------------------------------

    def question_opened(self) -> None:
        self.host.clock.pause()
        self.host.prompt.display = False  # the draft stays in it, hidden

    def question_closed(self) -> None:
        self.host.clock.resume()
        self.host.prompt.display = True
        self.host.prompt.focus()

    def permission_answered(self, request: PermissionRequested, reply: PromptReply | None) -> None:
        host = self.host
        answer = reply.answer if reply is not None else None
        host.answers.append((request.request_id, answer))
        if reply is None or answer is None or host.agent is None:
            return
        host.agent.answer_permission(request.request_id, answer)
        host.run_view.show_permission_answer(request, answer)
        # The user scrolled up to read before deciding; what the answer sets going is
        # what they want to see next.
        host.transcript.follow()
        if reply.accept_edits:
            host.set_mode("accept-edits")
        if reply.stop_turn:
            # Esc / n: no, and stop; the user says what to do instead. The engine tells
            # the model the call was refused (not interrupted: nothing of it ran).
            self.interrupt(reason=STOPPED_NOTE, refused=request)
