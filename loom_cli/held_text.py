"""Streamed text held back until the redactor can see every secret in it whole.

The model's text arrives in small pieces; a key split between two of them would pass the
redactor in halves. Text is given out a line at a time (a secret's name and value, a
``Bearer`` token, sit on one line), and a private key block from its BEGIN line until its
END line. What is still held when the stream moves on is given out then.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from loom_engine.events import AgentEvent, TextDelta, ThinkingDelta

_BLOCK_START = "-----BEGIN"
_BLOCK_END = "-----END"
# A block that never ends is given out past this size (redacted as far as it goes).
_MOST_HELD = 20_000


@dataclass
class HeldText:
    held: str = ""

    def take(self, piece: str) -> str:
        """What of the text so far may be sent now."""
        self.held += piece
        end = self._safe_end()
        out, self.held = self.held[:end], self.held[end:]
        return out

    def flush(self) -> str:
        out, self.held = self.held, ""
        return out

    def _safe_end(self) -> int:
        if len(self.held) > _MOST_HELD:
            return len(self.held)
        limit = len(self.held)
        start = self.held.find(_BLOCK_START)
        while start != -1:
            end = self.held.find(_BLOCK_END, start)
            closed = self.held.find("\n", end) if end != -1 else -1
            if closed == -1:
                limit = start  # a key block whose END line has not come whole: nothing of it yet
                break
            start = self.held.find(_BLOCK_START, closed)
        # Whole lines only; a block that closed goes out with the line its END is on.
        return self.held.rfind("\n", 0, limit) + 1


class HeldDeltas:
    """An event stream whose text and thinking deltas are held as :class:`HeldText` holds
    them, each agent's apart: a delta goes out with its whole lines only; whatever is held
    goes out before any other event (the stream moved on), so the order stays the stream's."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[HeldText, TextDelta | ThinkingDelta]] = {}

    def events(self, event: AgentEvent) -> list[AgentEvent]:
        if not isinstance(event, (TextDelta, ThinkingDelta)):
            return [*self.flush(), event]
        key = (event.agent_id, event.type)
        # This agent's thinking ends where its answer starts; other agents (parallel
        # sub-agents) stream on beside it, each held apart.
        out: list[AgentEvent] = self.flush(agent=event.agent_id, but=key)
        held = self._held.get(key, (HeldText(), event))[0]
        self._held[key] = (held, event)
        if text := held.take(event.text):
            out.append(replace(event, text=text))
        return out

    def flush(self, *, agent: str | None = None, but: tuple[str, str] | None = None) -> list[AgentEvent]:
        """What is held (``agent``'s only, when given; not ``but``'s), as one delta per
        agent and kind."""
        out: list[AgentEvent] = []
        for key in [key for key in self._held if key != but and agent in (None, key[0])]:
            held, last = self._held.pop(key)
            if text := held.flush():
                out.append(replace(last, text=text))
        return out
