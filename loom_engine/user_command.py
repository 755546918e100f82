"""``!command``: the user runs a shell command themselves, and its output becomes context.

The command is the user's own, typed at their prompt: it runs at once, as their shell
would run it — no permission question, no rule, no hook, and outside the session's
sandbox — like Claude Code's ``!``. It still goes through the tool pipeline's
execution and formatting, so it gets the bash tool's live output, the session's cwd,
redaction and the size cap, and the same events; no model turn follows. What ran is
added to the conversation as a user message, so the next request shows the model the
command and its output. (A `` !`cmd` `` line in a command file is not the user's: it is
checked and sandboxed, see loom_engine.commands.invoke.)
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from .events import Notice, ToolFinished
from .messages import Message, ToolUsePart

if TYPE_CHECKING:
    from .run import Run
    from .tools.base import ToolContext

SHELL_TOOL = "bash"
# The key of the user message's meta that marks it as a command the user ran; a UI
# shows such a message as a command block, and a resumed session does not take it
# for a prompt left unanswered.
META_KEY = "user_command"


def context_text(command: str, output: str) -> str:
    """What the model reads about the command."""
    return (f"[The user ran this shell command themselves (Loom's \"!\" prefix). It is not a request to "
            f"you; its output is context for what they ask next.]\n$ {command}\n{output}")


def is_user_command(message: Message) -> bool:
    return message.role == "user" and isinstance(message.meta.get(META_KEY), dict)


async def run_user_command(run: Run, command: str) -> Message | None:
    """Run ``command`` as the user's own; the message added to the transcript, or None
    when it did not run (interrupted before it started, no shell tool)."""
    if run.pipeline.registry.get(SHELL_TOOL) is None:
        run.emit(Notice(level="warning", message="shell commands are not available: this agent has no bash tool",
                        **run.stamp()))
        return None
    call = ToolUsePart(id="user_" + uuid.uuid4().hex[:12], name=SHELL_TOOL, input={"command": command})
    # No rules (None allows everything) and no hooks: nothing stands between the user
    # and their own command.
    pipeline = replace(run.pipeline, permissions=None, hooks=None,
                       make_context=_unconfined(run.pipeline.make_context))
    try:
        outcome = await pipeline.run(call)
    except asyncio.CancelledError:
        if not run.cancel.cancelled:
            raise
        run.emit(ToolFinished(call_id=call.id, name=SHELL_TOOL, content="Interrupted before the command ran.",
                              is_error=True, duration_ms=0.0, **run.stamp()))
        return None
    result = outcome.result
    message = Message.user(context_text(command, result.content),
                           **{META_KEY: {"command": command, "output": result.content,
                                         "is_error": result.is_error}})
    run.deps.transcript.append(message)
    return message


def _unconfined(make_context: Callable[[str], ToolContext]) -> Callable[[str], ToolContext]:
    """The contexts of the user's own command: outside the sandbox, as their shell runs it."""

    def make(call_id: str) -> ToolContext:
        return replace(make_context(call_id), sandbox=None)

    return make
