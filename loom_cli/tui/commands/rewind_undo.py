"""What undoing the chat's last rewind needs (the chat keeps one: `ChatHost.last_rewind`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loom_engine.messages import Message

    from ...chat_agent import ChatAgent


@dataclass(frozen=True)
class RewindUndo:
    """What undoing the chat's last rewind needs."""

    agent: ChatAgent  # the agent it was made with (a new session forgets it)
    index: int  # the prompt it went back to
    undo_snapshot: int | None  # the files just before it (None: no file was restored)
    previous: tuple[Message, ...] | None  # the conversation just before it (None: not rewound)
    after: frozenset[str]  # the ids of the conversation's messages right after it
    prompt_text: str  # what was put back in the input
