"""The eight stages every tool call goes through.

1. discover -> 2. validate -> 3. PreToolUse hooks -> 4. authorize (the rules, the
PermissionRequest hooks, the user's answer) -> 5. check cancel -> 6. execute ->
7. format (redact, cap) -> 8. PostToolUse hooks (their notes join the result, and so
does what a hook rewrote of the files the tool wrote).

Every failure becomes an error result the model reads; nothing here ends the run
except an abort (and a hook's ``"continue": false``, which the turn honours after the
batch). How the answers of the rules, the hooks and the user combine is decided in
:mod:`.authorize`; the hooks are run by :mod:`.tool_hooks`; this module does the I/O.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..bus import EventBus
from ..events import (
    AgentEvent,
    Notice,
    PermissionAnswered,
    PermissionRequested,
    ToolCallStarted,
    ToolFinished,
)
from ..execution import Cancelled
from ..hooks.engine import HookEngine
from ..hooks.payload import claude_tool_name, loom_tool_input
from ..messages import ImagePart, ToolResultPart, ToolUsePart, scrub_text
from ..metrics import RunMetrics
from ..permissions.answer import PermissionAnswer
from ..permissions.decision import PermissionDecision
from ..redact import Redactor
from ..transcript import REFUSED_KIND, refused_result_text
from .authorize import Authorization, Facts, authorize, denial_text
from .base import Tool, ToolContext, ToolError, ToolOutput
from .hook_rewrites import WrittenFiles, written_by_call
from .registry import ToolRegistry
from .tool_hooks import ToolHooks

if TYPE_CHECKING:
    from ..permissions.manager import PermissionManager

MAX_RESULT_CHARS = 60_000


def cap_text(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Keep the head and the tail, and say how much of the middle was cut."""
    if len(text) <= limit:
        return text
    head = text[: limit // 2]
    tail = text[-(limit // 2):]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n\n[... {cut:,} characters cut from the middle ...]\n\n{tail}"


def cut_size(original: str, capped: str) -> dict[str, Any]:
    """Display fields that tell the UI the real size of an output cut by cap_text (the
    result text is the cut copy, so its own line count would understate it)."""
    head, _, tail = capped.partition("\n\n[... ")
    tail = tail.split("\n\n", 1)[1] if "\n\n" in tail else ""
    return {"output_lines": original.count("\n") + (0 if original.endswith("\n") else 1),
            "output_chars": len(original), "truncated": True,
            "shown_head_lines": head.count("\n"), "shown_tail_lines": tail.count("\n")}


def format_validation_error(tool_name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        problems.append(f"{where}: {item['msg']}")
    return f"Invalid arguments for {tool_name}: " + "; ".join(problems) + ". Fix the arguments and call again."


@dataclass(frozen=True)
class ToolRun:
    """What one call gives back: the result for the model and the UI's rendering hint."""

    result: ToolResultPart
    display: Mapping[str, Any] | None = None
    images: tuple[ImagePart, ...] = ()
    # Set when a hook (this call's or an earlier one's) answered "continue": false: the
    # run stops after this batch of calls.
    stop_reason: str | None = None


@dataclass(frozen=True)
class _Staged:
    """Where a call got to: its output, the seconds spent on the user's answer, whether
    the tool itself ran (PostToolUse hooks fire only then) and the arguments it ran with."""

    output: ToolOutput
    waited_s: float = 0.0
    executed: bool = False
    input: Mapping[str, Any] | None = None
    denied: bool = False  # the permission check said no
    written: tuple[Path, ...] = ()  # the files the tool wrote


@dataclass(frozen=True)
class _Denied:
    """What the model reads about a call that was not permitted."""

    output: ToolOutput


@dataclass
class ToolPipeline:
    registry: ToolRegistry
    bus: EventBus
    metrics: RunMetrics
    make_context: Callable[[str], ToolContext]
    emit: Callable[[AgentEvent], None]
    # Fields stamped on every event (turn id, agent id, parent ids).
    stamp: Callable[[], Mapping[str, Any]]
    permissions: PermissionManager | None = None  # None allows everything
    interactive: bool = True
    redact: bool = True
    redactor: Redactor = field(default_factory=Redactor)
    timeout_s: float = 600.0
    # The user's hook commands (PreToolUse, PermissionRequest, PostToolUse...); None: none.
    hooks: HookEngine | None = None
    # Asks are shown one at a time even when calls run in parallel.
    _ask_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _hooks: ToolHooks = field(init=False)

    def __post_init__(self) -> None:
        self._hooks = ToolHooks(self.hooks, self.emit, self.stamp)

    async def settle(self) -> None:
        """At the run's end: wait for the permission-prompt notification hooks still running."""
        await self._hooks.settle()

    def is_concurrency_safe(self, call: ToolUsePart) -> bool:
        tool = self.registry.get(call.name)
        return bool(tool and tool.is_concurrency_safe)

    async def run(self, call: ToolUsePart) -> ToolRun:
        started = time.monotonic()
        self.emit(ToolCallStarted(call_id=call.id, name=call.name, input=dict(call.input), **self.stamp()))
        staged = await self._stages(call)
        output, waited_s = staged.output, staged.waited_s
        # 7. format
        content = output.content
        display = output.display
        if self.redact:
            content = self.redactor.redact(content)
            display = self.redactor.redact_tree(display)  # a diff may show a key too
        capped = cap_text(content)
        if len(capped) != len(content) and not (display or {}).get("truncated"):
            display = {**(display or {}), **cut_size(content, capped)}
        content = capped or ("(no output)" if not output.is_error else "Tool failed without a message.")
        # Output may carry lone surrogates (file names that are not UTF-8 decode to them);
        # the session file and the next request could not encode them.
        content = scrub_text(content)
        # 8. PostToolUse hooks
        if staged.executed and staged.input is not None:
            content += await self._post_hooks(call, staged.input, content, output.is_error, display,
                                              staged.written)
        # The call's own time: a question to the user is not the tool being slow.
        duration_ms = (time.monotonic() - started - waited_s) * 1000
        self.metrics.record_tool(call.name, duration_ms, output.is_error)
        self.emit(ToolFinished(call_id=call.id, name=call.name, content=content, is_error=output.is_error,
                               duration_ms=duration_ms, display=display, denied=staged.denied, **self.stamp()))
        return ToolRun(ToolResultPart(call.id, content, output.is_error), display, output.images,
                       self._hooks.stop_reason)

    async def _stages(self, call: ToolUsePart) -> _Staged:
        """The call's output, and the seconds spent waiting for the user's answer."""
        # 1. discover
        tool = self.registry.get(call.name)
        if tool is None:
            available = ", ".join(self.registry.names) or "none"
            return _Staged(ToolOutput(f"Unknown tool '{call.name}'. Available tools: {available}.", is_error=True))
        # 2. validate
        if call.raw_input is not None:
            return _Staged(ToolOutput(
                f"The arguments for {call.name} were not valid JSON (possibly cut off): "
                f"{call.raw_input[:200]!r}. Send a complete JSON object.", is_error=True))
        arguments: Mapping[str, Any] = dict(call.input)
        invalid = _validate(tool, call.name, arguments)
        if isinstance(invalid, ToolOutput):
            return _Staged(invalid)
        args = invalid
        ctx = self.make_context(call.id)
        # 3. PreToolUse hooks: they may block the call, change its arguments (validated
        # again) or answer the permission question (never over a deny rule).
        pre = await self._hooks.pre_tool_use(call, arguments, ctx)
        facts = Facts(pre_tool_use=pre.answer, interactive=self.interactive)
        blocked = authorize(facts)
        if blocked.behavior == "deny":
            return _Staged(ToolOutput(denial_text(blocked), is_error=True), denied=True)
        if pre.stopped:
            return _Staged(ToolOutput(f"A PreToolUse hook stopped the run: {self._hooks.stop_reason}", is_error=True))
        if pre.updated_input is not None:
            arguments = loom_tool_input(call.name, arguments, pre.updated_input)
            checked = _validate(tool, call.name, arguments)
            if isinstance(checked, ToolOutput):
                return _Staged(ToolOutput("A PreToolUse hook changed the arguments and they are not valid, so "
                                          f"the call was refused. {checked.content}", is_error=True))
            args = checked
        if self.redact:
            # Progress lines leave for the UI and stream-json as they come: redact them
            # there, with one state per call so a key block spanning lines is known.
            redact_line, send = self.redactor.lines(), ctx.progress
            ctx.progress = lambda line: send(redact_line(line))
        # 4. authorize
        asked_at = time.monotonic()
        try:
            denial = await self._authorize(tool, args, ctx, call, facts, arguments)
        except (asyncio.CancelledError, Cancelled):
            raise
        except ToolError as error:  # the tool found the arguments unusable while naming its target
            denial = ToolOutput(str(error), is_error=True)
        except Exception as error:
            self.metrics.errors[f"permission:{type(error).__name__}"] += 1
            denial = ToolOutput(f"Permission denied: the arguments could not be checked "
                                f"({type(error).__name__}: {error}). Fix them and call again.", is_error=True)
        waited_s = time.monotonic() - asked_at
        if isinstance(denial, _Denied):
            return _Staged(denial.output, waited_s, denied=True)
        if denial is not None:
            return _Staged(denial, waited_s)
        # 5. check cancel
        if ctx.cancel.cancelled:
            return _Staged(ToolOutput("Interrupted by user before the tool ran.", is_error=True), waited_s)
        # 6. execute
        before = dict(ctx.state.read_files)
        output = await self._execute(tool, args, ctx, call)
        written = () if tool.is_read_only else written_by_call(before, ctx.state)
        return _Staged(output, waited_s, executed=True, input=arguments, written=written)

    async def _execute(self, tool: Tool, args: BaseModel, ctx: ToolContext, call: ToolUsePart) -> ToolOutput:
        try:
            return await asyncio.wait_for(tool.run(args, ctx), timeout=self.timeout_s)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        except TimeoutError:
            return ToolOutput(f"{call.name} timed out after {self.timeout_s:g} s.", is_error=True)
        except Cancelled:
            return ToolOutput("Interrupted by user.", is_error=True)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a tool bug must not end the run
            self.metrics.errors[f"tool:{type(error).__name__}"] += 1
            return ToolOutput(f"{call.name} failed: {type(error).__name__}: {error}", is_error=True)

    async def _authorize(self, tool: Tool, args: BaseModel, ctx: ToolContext, call: ToolUsePart,
                         facts: Facts, arguments: Mapping[str, Any]) -> ToolOutput | _Denied | None:
        """Hear the rules, then the PermissionRequest hooks, then the user, each only
        while :func:`authorize` still asks them. None: the call may run."""
        verdict = authorize(facts)
        while verdict.behavior == "ask":
            if verdict.by == "rules":
                facts = replace(facts, rule=await self._check_rules(tool, args, ctx))
            elif verdict.by == "PermissionRequest hook" and verdict.question is not None:
                answer = await self._hooks.permission_request(call, arguments, ctx, verdict.question)
                facts = replace(facts, permission_request=answer)
            elif verdict.question is not None:
                async with self._ask_lock:
                    return await self._ask(tool, args, ctx, call, verdict.question)
            else:  # no question to put: cannot happen (authorize always names one for an ask)
                raise AssertionError(f"an ask of the {verdict.by} without a question")
            verdict = authorize(facts)
        if verdict.behavior == "allow":
            return None
        if verdict.by == "headless run":
            self._warn_denied(tool, call, verdict)
        return _Denied(ToolOutput(denial_text(verdict), is_error=True))

    async def _check_rules(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> PermissionDecision | None:
        if self.permissions is None:
            return None
        target = tool.permission_target(args, ctx)
        # Off the event loop: checking a long bash line parses it, and the TUI must stay live.
        return await asyncio.to_thread(self.permissions.check, tool.name, target,
                                       is_read_only=tool.reads_only(args), cwd=ctx.cwd)

    def _warn_denied(self, tool: Tool, call: ToolUsePart, denied: Authorization) -> None:
        """A headless run tells its user what it denied and how to allow it."""
        hint = (denied.question.hint if denied.question else "") or "a --allow rule"
        message = f"refused {tool.name} {_summary(call)} (not run): {denied.reason}; allow it with {hint}"
        self.emit(Notice(level="warning", message=message, **self.stamp()))

    async def _post_hooks(self, call: ToolUsePart, arguments: Mapping[str, Any], content: str,
                          is_error: bool, display: Mapping[str, Any] | None, written: tuple[Path, ...]) -> str:
        if self.hooks is None:
            return ""
        ctx = self.make_context(call.id)
        # A formatter hook may rewrite what the tool wrote: keep the files as the tool left them.
        files = (WrittenFiles.capture(written)
                 if written and not is_error and self.hooks.wants("PostToolUse", claude_tool_name(call.name), call.name)
                 else None)
        text = await self._hooks.post_tool_use(call, arguments, ctx, content, is_error, display)
        rewritten = files.rewritten(ctx.state, self.hooks.root) if files is not None else ""
        if rewritten:
            text += "\n\n" + rewritten
        if not text:
            return ""
        return scrub_text(self.redactor.redact(text) if self.redact else text)

    async def _ask(self, tool: Tool, args: BaseModel, ctx: ToolContext, call: ToolUsePart,
                   decision: PermissionDecision) -> ToolOutput | _Denied | None:
        permissions = self.permissions
        try:
            preview = await tool.preview(args, ctx)
        except ToolError as error:
            # The call cannot work as sent (an edit whose old_string is not in the file):
            # the model gets the error at once, and the user is not asked about it.
            return ToolOutput(str(error), is_error=True)
        except Exception as error:  # the preview is a courtesy; the call itself decides
            preview = {"kind": "error", "message": f"could not preview: {error}"}
        request_id = self.bus.new_request_id("perm")
        self.emit(PermissionRequested(request_id=request_id, call_id=call.id, tool=tool.name,
                                      input=dict(call.input), reason=decision.reason, preview=preview,
                                      suggested_rules=tuple(decision.suggested_rules), **self.stamp()))
        self._hooks.notify_permission_prompt(ctx, tool.name)
        answer = await self.bus.request(request_id)
        if not isinstance(answer, PermissionAnswer):
            answer = PermissionAnswer("deny", note="invalid answer")
        self.emit(PermissionAnswered(request_id=request_id, call_id=call.id, decision=answer.decision,
                                     note=answer.note, **self.stamp()))
        if permissions is None:
            pass  # a hook asked: there is no rule to save
        elif answer.decision == "allow_session":
            permissions.allow_for_session(decision.suggested_rules)
        elif answer.decision == "allow_project":
            try:
                permissions.allow_for_project(decision.suggested_rules)
            except (OSError, ValueError) as error:
                # The call is still allowed once; only saving the rule failed.
                permissions.allow_for_session(decision.suggested_rules)
                self.emit(Notice(level="warning", message=f"could not save the rule: {error}", **self.stamp()))
        if answer.allowed:
            return None
        return _Denied(ToolOutput(refused_result_text(answer.note), is_error=True,
                                  display={"kind": REFUSED_KIND, **({"note": answer.note} if answer.note else {})}))


def _validate(tool: Tool, name: str, arguments: Mapping[str, Any]) -> BaseModel | ToolOutput:
    try:
        validated: BaseModel = tool.input_model.model_validate(dict(arguments))
        return validated
    except ValidationError as error:
        return ToolOutput(format_validation_error(name, error), is_error=True)
    except Exception as error:
        return ToolOutput(f"Invalid arguments for {name}: {type(error).__name__}: {error}. "
                          "Fix the arguments and call again.", is_error=True)


def _summary(call: ToolUsePart) -> str:
    for key in ("command", "path", "pattern"):
        if key in call.input:
            return f"({json.dumps(call.input[key])[:80]})"
    return ""
