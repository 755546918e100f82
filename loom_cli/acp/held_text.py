"""Streamed text held back until the redactor can see every secret in it whole.

The model's text arrives in small pieces; a key split between two of them would pass the
redactor in halves. Text is given out a line at a time (a secret's name and value, a
``Bearer`` token, sit on one line), and a private key block from its BEGIN line until its
END line. What is still held when the stream moves on is given out then.
"""

from __future__ import annotations

from dataclasses import dataclass

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
