"""The user's hook commands around one tool call: PreToolUse before the rules are
checked, PermissionRequest when the call would be asked about, Notification while the
user is asked, PostToolUse / PostToolUseFailure after the tool ran.

This module runs the hooks and turns their verdicts into what the pipeline uses
(:class:`~loom_engine.tools.authorize.HookAnswer` for the permission decision, the
notes added to a result); how those answers weigh against the rules is decided in
:mod:`loom_engine.tools.authorize`, not here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..events import AgentEvent
from ..hooks.config import HookEventName
from ..hooks.engine import HookEngine
from ..hooks.outcome import HookVerdict
from ..hooks.payload import claude_tool_name, claude_tool_response, tool_fields
from ..messages import ToolUsePart
from ..permissions.decision import PermissionDecision
from .authorize import HookAnswer
from .base import ToolContext


@dataclass(frozen=True)
class PreToolUse:
    """What the PreToolUse hooks said about one call."""

    answer: HookAnswer
    # Arguments a hook changed (Claude Code's names); None: unchanged.
    updated_input: Mapping[str, Any] | None = None
    # A hook answered "continue": false.
    stopped: bool = False


@dataclass
class ToolHooks:
    engine: HookEngine | None
    emit: Callable[[AgentEvent], None]
    stamp: Callable[[], Mapping[str, Any]]
    # Set when a hook answered "continue": false: the run stops after this batch of calls.
    stop_reason: str | None = None
    # Permission-prompt notification hooks still running: the call goes on once the user
    # answers, and :meth:`settle` waits for them at the run's end.
    _notifying: set[asyncio.Task[None]] = field(default_factory=set)

    async def pre_tool_use(self, call: ToolUsePart, arguments: Mapping[str, Any], ctx: ToolContext) -> PreToolUse:
        verdict = await self._fire("PreToolUse", call, arguments, ctx)
        return PreToolUse(_answer(verdict), verdict.updated_input, verdict.stop)

    async def permission_request(self, call: ToolUsePart, arguments: Mapping[str, Any], ctx: ToolContext,
                                 question: PermissionDecision) -> HookAnswer:
        """A PermissionRequest hook's answer in the user's place. An ``updatedInput``
        given here is not applied: the rules were checked against the arguments as they
        are, and a change after that check would skip it (a PreToolUse hook may change
        them before the check)."""
        verdict = await self._fire("PermissionRequest", call, arguments, ctx,
                                   permission_suggestions=list(question.suggested_rules), reason=question.reason)
        return _answer(verdict)

    def notify_permission_prompt(self, ctx: ToolContext, tool_name: str) -> None:
        """Notification hooks (a desktop alert, say) run while the question waits, and
        never hold the call up once it is answered: :meth:`settle` waits for them."""
        if self.engine is None or not self.engine.wants("Notification", "permission_prompt"):
            return
        notify = asyncio.create_task(self._notify(self.engine, ctx, f"Loom needs your permission to use {tool_name}"))
        self._notifying.add(notify)
        notify.add_done_callback(self._notifying.discard)

    async def post_tool_use(self, call: ToolUsePart, arguments: Mapping[str, Any], ctx: ToolContext, content: str,
                            is_error: bool, display: Mapping[str, Any] | None) -> str:
        """What PostToolUse / PostToolUseFailure hooks add to the result for the model
        (not yet redacted)."""
        if self.engine is None:
            return ""
        event: HookEventName = "PostToolUseFailure" if is_error else "PostToolUse"
        if is_error:
            extra: dict[str, Any] = {"error": content}
        else:
            # Claude Code's shapes (see claude_tool_response), and Loom's text as the model reads it.
            extra = {"tool_response": claude_tool_response(call.name, arguments, content, display,
                                                           self.engine.root),
                     "loom_tool_response": content}
        verdict = await self._fire(event, call, arguments, ctx, **extra)
        notes = []
        if verdict.blocked:
            notes.append(f"[{event} hook: {verdict.reason}]")
        if verdict.context:
            notes.append(f"[{event} hook context: {verdict.context}]")
        return "\n\n" + "\n\n".join(notes) if notes else ""

    async def settle(self) -> None:
        """At the run's end: wait for the notification hooks still running, so each is
        reported and none outlives the run (their HookRan may come after the run's final
        event). An abort has stopped them already (they hold the run's cancel token); if
        this wait is itself cancelled, they are cancelled too."""
        pending = set(self._notifying)
        if not pending:
            return
        try:
            await asyncio.gather(*pending, return_exceptions=True)
        except BaseException:
            for task in pending:
                task.cancel()
            # Their processes are killed and reaped by run_hook's own clean-up.
            await asyncio.wait(pending, timeout=5)
            raise

    async def _fire(self, event: HookEventName, call: ToolUsePart, arguments: Mapping[str, Any],
                    ctx: ToolContext, **extra: Any) -> HookVerdict:
        engine = self.engine
        if engine is None or not engine.wants(event, claude_tool_name(call.name), call.name):
            return HookVerdict()
        fields = {**tool_fields(call.name, arguments, call.id, engine.root), **extra}
        verdict = await engine.fire(event, fields, names=(claude_tool_name(call.name), call.name),
                                    call_id=call.id, cancel=ctx.cancel, emit=self.emit, stamp=self.stamp)
        if verdict.stop and self.stop_reason is None:
            self.stop_reason = verdict.stop_reason or f"a {event} hook stopped the run"
        return verdict

    async def _notify(self, engine: HookEngine, ctx: ToolContext, message: str) -> None:
        await engine.fire("Notification", {"message": message, "notification_type": "permission_prompt"},
                          names=("permission_prompt",), cancel=ctx.cancel, emit=self.emit, stamp=self.stamp)


def _answer(verdict: HookVerdict) -> HookAnswer:
    """A block counts as a deny; a deny's reason is the block's, else the hook's own."""
    if verdict.blocked or verdict.decision == "deny":
        return HookAnswer("deny", verdict.reason or verdict.decision_reason)
    return HookAnswer(verdict.decision, verdict.decision_reason)
