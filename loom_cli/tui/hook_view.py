"""How a hook's run shows in the chat: a one-line notice when it blocks or fails, and its
time in the block of the tool call it ran for ("hook 0.2s").

A hook that ran fine says nothing: the user set it up and it did its work. A block is
worth a line (the agent's plan changed because of it) and so is a failure (the user's
script is broken); both name the command and its reason.
"""

from __future__ import annotations

from loom_engine.events import HookRan

from .tool_block import ToolBlock
from .transcript import Transcript

_COMMAND_ROOM = 60  # a long command line is cut: the notice stays one line at 120 columns
_REASON_ROOM = 200


def _cut(text: str, room: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= room else line[: room - 1] + "…"


def hook_notice(event: HookRan) -> str | None:
    """The notice for a hook's run, or None when there is nothing to say (it ran fine)."""
    command = _cut(event.command, _COMMAND_ROOM)
    reason = _cut(event.message, _REASON_ROOM)
    match event.outcome:
        case "blocked" if event.event == "UserPromptSubmit":
            return None  # the engine's own notice says the prompt was not sent, and why
        case "blocked":
            text = f"⊘ {event.event} hook blocked ({command})" + (f": {reason}" if reason else "")
        case "error":
            text = f"⚠ {event.event} hook failed ({command})" + (f": {reason}" if reason else "")
        case "timeout":
            text = f"⚠ {event.event} hook timed out ({command})" + (f": {reason}" if reason else "")
        case _:
            return None
    return ("  ↳ " + text) if event.depth > 0 else text


def show_hook_ran(transcript: Transcript, event: HookRan, *, stale: bool = False) -> None:
    """Show one hook's run. ``stale``: the run was already stopped (Esc): its blocks still
    get their time, but no notice is added after the "interrupted" line."""
    if event.call_id:
        for block in transcript.query(ToolBlock):  # sub-agents' blocks are nested: query finds them
            if block.call_id == event.call_id:
                block.set_status(block.data.status, hook_ms=block.data.hook_ms + event.duration_ms)
                break
    notice = None if stale else hook_notice(event)
    if notice is not None:
        transcript.add_notice(notice, "warning")
