"""The transcript: the conversation's messages, kept valid and saved as they change.

Everything that adds to or rewrites the history goes through :class:`Transcript`, so
the session file always matches what the next request will send. After any stop the
transcript must satisfy both providers — every tool_use answered by exactly one
tool_result in the next message, no empty text — and the model is told, in plain
words, what was cut off instead of meeting a silent gap.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .messages import Message, TextPart, ToolResultPart, scrub_message
from .turn_state import TurnState
from .usage import Usage


@dataclass(frozen=True)
class SubagentRun:
    """A finished sub-agent, kept in the parent's session so a trajectory export
    (``loom export``) can show what it did, not only the answer the parent read."""

    call_id: str  # the parent's ``task`` call
    description: str
    agent_type: str | None  # the custom agent it ran as; None: the general sub-agent
    model: str
    messages: tuple[Message, ...]
    usage: Usage
    cost_usd: float
    started: float  # epoch seconds
    ended: float
    outcome: str  # "finished", or why it did not finish


class SessionLog(Protocol):
    """Where a transcript is saved as it changes (the session store's writer)."""

    id: str

    def append_message(self, message: Message) -> None: ...

    def append_turn_state(self, state: TurnState, run_end: str | None = None) -> None: ...

    def append_compaction(self, messages: Sequence[Message]) -> None: ...

    def append_rewind(self, prompt_id: str, messages: Sequence[Message], *, mode: str = "both",
                      undo_snapshot: int | None = None) -> None: ...

    def append_model(self, model: str) -> None:
        """The user switched the model (/model): a resume goes on with it."""
        ...

    def append_subagent(self, run: SubagentRun) -> None:
        """A sub-agent finished (its history is not part of the conversation)."""
        ...

    def close(self) -> None:
        """The session ended: flush and release the file (the application calls it)."""
        ...


class Transcript:
    def __init__(self, messages: Sequence[Message] = (), session: SessionLog | None = None) -> None:
        self._messages = list(messages)
        self.session = session

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def append(self, message: Message) -> None:
        # A lone surrogate (from a prompt or a tool's output) could be neither saved nor sent.
        message = scrub_message(message)
        self._messages.append(message)
        if self.session is not None:
            self.session.append_message(message)

    def replace(self, messages: Sequence[Message]) -> None:
        """The history after a compaction: saved as one record, not message by message."""
        self._messages = list(messages)
        if self.session is not None:
            self.session.append_compaction(self._messages)

    def save_model(self, model: str) -> None:
        if self.session is not None:
            self.session.append_model(model)

    def record_subagent(self, run: SubagentRun) -> None:
        if self.session is not None:
            self.session.append_subagent(run)

    def save_turn_state(self, state: TurnState, run_end: str | None = None) -> None:
        if self.session is not None:
            self.session.append_turn_state(state, run_end=run_end)

    def clear(self) -> None:
        self._messages.clear()

    def rewind_to(self, prompt_id: str, *, truncate: bool = True, mode: str = "both",
                  undo_snapshot: int | None = None) -> bool:
        """Record a rewind to just before the prompt ``prompt_id``; with ``truncate``, it
        and everything after it leave the conversation. The session keeps them (the
        rewind is one more record), so nothing is lost. False when no such message is in
        the conversation (nothing is changed)."""
        index = next((i for i, m in enumerate(self._messages) if m.id == prompt_id), None)
        if index is None:
            return False
        if truncate:
            del self._messages[index:]
        if self.session is not None:
            self.session.append_rewind(prompt_id, self._messages, mode=mode, undo_snapshot=undo_snapshot)
        return True

    def restore_history(self, messages: Sequence[Message], *, mode: str = "both",
                        undo_snapshot: int | None = None) -> None:
        """Put back a whole history (undoing a rewind); saved as a rewind record."""
        self._messages = list(messages)
        if self.session is not None:
            self.session.append_rewind("", self._messages, mode=mode, undo_snapshot=undo_snapshot)

    def drop_unanswered_prompt(self, prompt_id: str) -> bool:
        """Take back a prompt the run failed on before any answer; True if it was taken back.

        Only when nothing but reminders follows it: a prompt the model already acted on
        (tool calls, partial text) stays, since what was done must stay in the history.
        Reminders stay too: each change they report is mentioned once. The session gets
        the history without it (a whole-history record, as after a compaction).
        """
        index = next((i for i, m in enumerate(self._messages) if m.id == prompt_id), None)
        if index is None or any(not m.meta.get("reminder") for m in self._messages[index + 1:]):
            return False
        del self._messages[index]
        if self.session is not None:
            self.session.append_compaction(self._messages)
        return True

    def close_interrupted_turn(self, *, partial_text: str, completed: Mapping[str, ToolResultPart],
                               running: Mapping[str, str], reason: str, refused: Collection[str] = ()) -> str:
        """Append what makes a cut-off turn valid; returns what was cut off, in words."""
        added, what = close_interrupted_turn(self._messages, partial_text=partial_text, completed=completed,
                                             running=running, reason=reason, refused=refused)
        for message in added:
            self.append(message)
        return what


def interrupted_result_text(note: str = "interrupted by user") -> str:
    """The result given to a tool call that never ran or never finished."""
    note = note.strip() or "interrupted"
    return f"{note[0].upper()}{note[1:]}: the tool did not run or did not finish."


# The reason of an abort in which the user refused a tool call ("n" to its question).
REFUSED_BY_USER = "refused by user"


# The display of a refused call's result (saved with the session): a resumed transcript
# draws the call as refused, not failed.
REFUSED_KIND = "refused"


def refused_result_text(note: str | None = None) -> str:
    """What the model reads of a call the user said no to: it did not run at all, so
    nothing it would have changed was applied (unlike an interrupted call, which may
    have done part of its work)."""
    text = "Refused by the user: this call was not run, so nothing it would have done was applied."
    return f"{text} Their note: {note}" if note else text


def close_interrupted_turn(messages: Sequence[Message], *, partial_text: str,
                           completed: Mapping[str, ToolResultPart], running: Mapping[str, str],
                           reason: str, refused: Collection[str] = ()) -> tuple[list[Message], str]:
    """Messages to append after ``messages`` and a short description of what was cut off.
    ``refused``: the calls the user said no to in stopping the turn."""
    added: list[Message] = []
    what: str
    last = messages[-1] if messages else None
    if partial_text.strip():
        added.append(Message.assistant(TextPart(partial_text), interrupted=True))
        what = "while streaming an answer"
    elif last is not None and last.role == "assistant" and last.tool_uses:
        missing, no = interrupted_result_text(), refused_result_text()
        results = [completed.get(call.id) or ToolResultPart(call.id, no if call.id in refused else missing,
                                                            is_error=True)
                   for call in last.tool_uses]
        displays = {c.id: {"kind": REFUSED_KIND} for c in last.tool_uses if c.id in refused and c.id not in completed}
        added.append(Message.tool_results(results, **({"displays": displays} if displays else {})))
        cut = [c.name for c in last.tool_uses if c.id not in completed and c.id not in refused]
        what = f"while running {', '.join(cut)}" if cut else "after the tools finished"
    elif running:
        what = f"while running {', '.join(running.values())}"
    else:
        what = "while waiting for the model"
    if refused:
        # The refused call's result may already be in (the answer arrived before the
        # stop): either way the turn ended on the user's "no", not on an interruption.
        names = [c.name for m in (*messages, *added) for c in m.tool_uses if c.id in refused]
        what = f"{', '.join(names) or 'a tool call'} not run"
        note = (f"[The user refused a tool call and stopped the previous turn ({what}). The refused call "
                "did not run: nothing it would have done was applied. Anything else cut off above is "
                "incomplete. Wait for the user's next instruction.]")
        added.append(Message.user(note, interruption=True, refused=True))
        return added, what
    note = (f"[The user interrupted the previous turn {what} ({reason}). Anything cut off above is "
            "incomplete; do not assume it finished. Wait for the user's next instruction.]")
    added.append(Message.user(note, interruption=True))
    return added, what


def close_dangling(messages: Sequence[Message]) -> list[Message]:
    """What to append to a transcript loaded from a session cut off mid-turn (kill -9).

    Empty when the transcript already ends cleanly.
    """
    if not messages:
        return []
    last = messages[-1]
    if last.role == "assistant" and last.tool_uses:
        added, _ = close_interrupted_turn(messages, partial_text="", completed={}, running={},
                                          reason="the session was cut off")
        return added
    # A command the user ran with "!" (see user_command.py) asks for no answer, nor does
    # the note of a rewind (snapshots/rewind.py) telling which files were reverted.
    if last.role in ("user", "tool") and not any(last.meta.get(k) for k in ("interruption", "user_command",
                                                                             "rewind")):
        # A request was in flight when the session stopped: the model never answered.
        return [Message.user("[The previous turn was cut off before you answered (the session was "
                             "interrupted). Wait for the user's next instruction.]", interruption=True)]
    return []
