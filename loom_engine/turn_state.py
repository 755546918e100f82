"""TurnState: where a conversation stands, besides its messages.

State at a turn boundary is exactly ``(messages, TurnState)``: that is what sessions
save and what a resumed run starts from. It lives below the turn loop so that the
session store can read and write it without importing the loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


def new_turn_id() -> str:
    return "turn_" + uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class TurnState:
    """Everything about the conversation's position besides its messages."""

    turn: int  # turns taken in this session
    turn_id: str
    parent_turn_id: str | None = None  # the parent agent's turn, for sub-agents
    compacted: bool = False  # a compaction happened during this turn
    stop_reason: str | None = None  # set on the final state of a run

    @classmethod
    def initial(cls, parent_turn_id: str | None = None) -> TurnState:
        return cls(turn=0, turn_id=new_turn_id(), parent_turn_id=parent_turn_id)

    def next_turn(self) -> TurnState:
        return TurnState(turn=self.turn + 1, turn_id=new_turn_id(), parent_turn_id=self.parent_turn_id)

    def resumed(self) -> TurnState:
        """The state a new run starts from after this one ended."""
        if not self.is_final:
            return self
        return replace(self, turn_id=new_turn_id(), compacted=False, stop_reason=None)

    def finish(self, reason: str) -> TurnState:
        return replace(self, stop_reason=reason)

    @property
    def is_final(self) -> bool:
        return self.stop_reason is not None

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "turn_id": self.turn_id, "parent_turn_id": self.parent_turn_id,
                "compacted": self.compacted, "stop_reason": self.stop_reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnState:
        return cls(turn=int(data.get("turn", 0)), turn_id=str(data.get("turn_id") or new_turn_id()),
                   parent_turn_id=data.get("parent_turn_id"), compacted=bool(data.get("compacted", False)),
                   stop_reason=data.get("stop_reason"))
