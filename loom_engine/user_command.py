"""``!command``: the user runs a shell command themselves, and its output becomes context.

The command goes through the same tool pipeline as the model's ``bash`` calls — the
same permission decision (allowed, asked, or denied), the same live output, redaction
and size cap, the same events — but no model turn follows. What ran is added to the
conversation as a user message, so the next request shows the model the command and
its output; a command that did not run (denied) adds nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

from .events import AgentEvent, Notice, PermissionAnswered, ToolFinished
from .messages import Message, ToolUsePart

if TYPE_CHECKING:
    from .permissions.manager import PermissionManager
    from .run import Run
    from .tools.base import Tool

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


async def run_user_command(run: Run, command: str, permissions: PermissionManager | None) -> Message | None:
    """Run ``command`` as the user's own; the message added to the transcript, or None
    when it did not run (denied, interrupted before it started, no shell tool)."""
    tool = run.pipeline.registry.get(SHELL_TOOL)
    if tool is None:
        run.emit(Notice(level="warning", message="shell commands are not available: this agent has no bash tool",
                        **run.stamp()))
        return None
    call = ToolUsePart(id="user_" + uuid.uuid4().hex[:12], name=SHELL_TOOL, input={"command": command})
    # Off the event loop, as the pipeline does: checking a long command line parses it.
    refused = await asyncio.to_thread(_refused_by_rule, run, tool, call, permissions)
    answers: list[PermissionAnswered] = []

    def watch(event: AgentEvent) -> None:
        if isinstance(event, PermissionAnswered) and event.call_id == call.id:
            answers.append(event)
        run.emit(event)

    pipeline = replace(run.pipeline, emit=watch)
    try:
        outcome = await pipeline.run(call)
    except asyncio.CancelledError:
        if not run.cancel.cancelled:
            raise
        # Aborted while the permission question was open: nothing ran.
        run.emit(ToolFinished(call_id=call.id, name=SHELL_TOOL, content="Interrupted before the command ran.",
                              is_error=True, duration_ms=0.0, **run.stamp()))
        return None
    if refused or any(a.decision == "deny" for a in answers):
        return None
    result = outcome.result
    message = Message.user(context_text(command, result.content),
                           **{META_KEY: {"command": command, "output": result.content,
                                         "is_error": result.is_error}})
    run.deps.transcript.append(message)
    return message


def _refused_by_rule(run: Run, tool: Tool, call: ToolUsePart, permissions: PermissionManager | None) -> bool:
    """Whether the pipeline will refuse the call without asking (a deny rule or mode, or
    a question a non-interactive run cannot put): the same check the pipeline makes."""
    if permissions is None:
        return False
    try:
        args = tool.input_model.model_validate(dict(call.input))
        ctx = run.pipeline.make_context(call.id)
        decision = permissions.check(tool.name, tool.permission_target(args, ctx), is_read_only=tool.is_read_only,
                                     cwd=ctx.cwd)
    except Exception:  # the pipeline reports an unusable call itself, as a refusal
        return True
    return decision.behavior == "deny" or (decision.behavior == "ask" and not run.pipeline.interactive)
