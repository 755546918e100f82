"""The seam through which the engine asks for workspace snapshots (rewind).

The engine only says when: before a user prompt, before and after a tool call that
may change files (anything not read-only, and every sub-agent), and when a run ends.
:class:`loom_engine.snapshots.checkpoints.Checkpointer` is the implementation; its
methods never raise, since a failed snapshot must not stop the assistant's work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

# Tools after which a snapshot is taken even though they count as read-only: a
# sub-agent may have been given edit tools or bash.
ALWAYS_SNAPSHOT_AFTER = frozenset({"task"})


class Checkpoints(Protocol):
    async def before_prompt(self, session_id: str | None, prompt_id: str, text: str) -> None:
        """The workspace just before the prompt ``prompt_id`` (a message id) is added."""
        ...

    async def before_tool(self, tool_name: str, tool_input: Mapping[str, object]) -> None:
        """Before a call of ``tool_name`` that may change files: the prompt's snapshot
        (which may still be being taken, overlapping the first request) is complete.
        ``tool_input`` names the files an edit tool is about to change."""
        ...

    async def after_tool(self, tool_name: str, tool_input: Mapping[str, object]) -> None:
        """After a call of ``tool_name`` finished (its changes are the assistant's)."""
        ...

    async def after_run(self) -> None:
        """The run ended (its last changes are the assistant's)."""
        ...


def snapshot_after(tool_name: str, read_only: bool) -> bool:
    """Whether a call of this tool is followed by a snapshot."""
    return not read_only or tool_name in ALWAYS_SNAPSHOT_AFTER
