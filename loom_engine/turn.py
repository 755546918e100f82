"""The turn function ``tt`` and its trampoline.

One call of :func:`tt` handles one turn: the base cases, context upkeep, the streamed
LLM call and the tool batch. Instead of calling itself for the next turn it *returns*
the next :class:`TurnState`, and :func:`drive` loops until a state is final. Python has
no tail-call elimination; returning the successor keeps the stack flat and makes the
cost of an event independent of how many turns came before it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import replace

from .events import (
    AssistantMessage,
    BudgetExceeded,
    Error,
    Finished,
    MaxTurnsReached,
    Notice,
    Retrying,
    TextDelta,
    ThinkingDelta,
    TurnStarted,
    UsageLimitWait,
)
from .execution import Cancelled
from .hooks.config import HookEventName
from .messages import Message, ToolResultPart, ToolUsePart
from .providers.base import ProviderError, StreamCompleted, StreamText, StreamThinking
from .providers.retry import RetryNotice
from .run import Run
from .turn_state import TurnState
from .usage import Usage

# A Stop hook may send the model back to work this many times in a row, no more.
MAX_STOP_BLOCKS = 8


async def drive(state: TurnState, run: Run) -> TurnState:
    """The trampoline: run turns until one returns a final state."""
    while not state.is_final:
        run.begin_turn(state)
        state = await tt(state, run)
    return state


async def tt(state: TurnState, run: Run) -> TurnState:
    """One turn. Returns the next turn's state, or a final state after a terminal event."""
    config = run.deps.config
    stamp = run.stamp

    # Base cases. The transcript is valid at every turn boundary, so stopping here
    # never leaves a tool_use without its result.
    run.cancel.raise_if_cancelled()
    if state.turn - run.state.first_turn >= config.max_turns:
        run.emit(MaxTurnsReached(max_turns=config.max_turns, num_turns=state.turn - run.state.first_turn, **stamp()))
        return state.finish("max_turns")
    if config.max_budget_usd is not None and run.deps.metrics.cost_usd >= config.max_budget_usd:
        run.emit(BudgetExceeded(max_budget_usd=config.max_budget_usd, cost_usd=run.deps.metrics.cost_usd, **stamp()))
        return state.finish("budget")

    run.emit(TurnStarted(turn=state.turn + 1, **stamp()))
    await run.deps.bus.wait_if_paused()
    run.refresh_tools()  # MCP tools that joined or changed: between requests, never within

    # Context upkeep before the request.
    if await run.compact():
        state = replace(state, compacted=True)

    completed = await _call_model(run)
    if completed is None:
        return state.finish("error")

    message = completed.message
    if message.parts:
        message = _with_call_facts(run, completed)
        run.deps.transcript.append(message)
        run.emit(AssistantMessage(message=message, **stamp()))
    calls = message.tool_uses
    if not calls:
        if await _stop_blocked(run, message.text):
            # A Stop hook said the work is not done: its reason went to the model.
            run.deps.transcript.save_turn_state(state.next_turn())
            return state.next_turn()
        run.emit(Finished(result=message.text, num_turns=state.turn + 1 - run.state.first_turn,
                          usage=run.deps.metrics.usage, cost_usd=run.deps.metrics.cost_usd,
                          stop_reason=completed.stop_reason, max_output_tokens=run.state.inflight.output_limit,
                          output_limited_by_window=run.state.inflight.output_limited_by_window, **stamp()))
        return state.next_turn().finish("end_turn")

    results = await run.scheduler.run(calls, run.run_tool, run.pipeline.is_concurrency_safe)
    results, loop_error = _guard_loops(run, calls, results)
    results = _with_path_rules(run, results)
    displays = {r.tool_use_id: run.state.inflight.displays[r.tool_use_id] for r in results
                if r.tool_use_id in run.state.inflight.displays}
    images = tuple(i for r in results for i in run.state.inflight.images.get(r.tool_use_id, ()))
    meta = {"displays": displays} if displays else {}
    run.deps.transcript.append(Message("tool", (*results, *images), meta=meta) if images
                          else Message.tool_results(results, **meta))
    run.state.inflight.end_turn()
    if loop_error:
        run.emit(Error(message=loop_error, kind="loop_guard", **stamp()))
        return state.next_turn().finish("error")
    if run.state.hook_stop is not None:  # a hook answered "continue": false
        run.emit(Notice(level="warning", message=f"a hook stopped the run: {run.state.hook_stop}", **stamp()))
        run.emit(Finished(result=message.text, num_turns=state.turn + 1 - run.state.first_turn,
                          usage=run.deps.metrics.usage, cost_usd=run.deps.metrics.cost_usd, **stamp()))
        return state.next_turn().finish("hook_stopped")
    run.deps.transcript.save_turn_state(state.next_turn())
    return state.next_turn()


async def _stop_blocked(run: Run, last_text: str) -> bool:
    """Whether Stop (SubagentStop in a sub-agent) hooks sent the model back to work."""
    event: HookEventName = "SubagentStop" if run.deps.identity.depth > 0 else "Stop"
    if run.deps.hooks is None or not run.deps.hooks.wants(event):
        return False
    verdict = await run.fire_hooks(event, {"stop_hook_active": run.state.stop_blocks > 0,
                                           "last_assistant_message": last_text})
    if not verdict.blocked or verdict.stop:
        return False
    if run.state.stop_blocks >= MAX_STOP_BLOCKS:
        run.emit(Notice(level="warning", message=f"a {event} hook blocked stopping {MAX_STOP_BLOCKS} times in a "
                        "row; the agent stops anyway", **run.stamp()))
        return False
    run.state.stop_blocks += 1
    run.deps.transcript.append(Message.user(f"{event} hook feedback (you are not done yet):\n{verdict.reason}",
                                       stop_hook=True))
    return True


async def _call_model(run: Run) -> StreamCompleted | None:
    """The streamed LLM call with retries; None after an error event was emitted."""
    stamp = run.stamp
    scratch = run.state.inflight
    compacted_for_length = False
    waited_s, waits = 0.0, 0  # for a usage limit, on this request
    while True:
        request = run.deps.client.build_request(run.deps.transcript.messages)
        scratch.start_stream()
        scratch.output_limit = request.max_tokens
        scratch.output_limited_by_window = request.max_tokens < run.deps.client.config.max_tokens
        thought: list[str] = []  # this attempt's thinking, for the usage of an abort
        run.request_started()
        try:
            await run.deps.client.usage_limits.before_request(run.cancel)  # a shared limit may hold it
            async for item in run.deps.client.stream(request, run.cancel):
                match item:
                    case StreamText(text=text):
                        scratch.text.append(text)
                        run.emit(TextDelta(text=text, **stamp()))
                    case StreamThinking(text=text):
                        thought.append(text)
                        run.emit(ThinkingDelta(text=text, **stamp()))
                    case StreamCompleted():
                        scratch.streaming = False
                        _record_usage(run, item)
                        run.request_finished(item.stop_reason)
                        return item
                    case RetryNotice():
                        run.deps.metrics.retries += 1
                        thought.clear()
                        if item.discard_partial:
                            scratch.text.clear()
                        run.emit(Retrying(attempt=item.attempt, delay_s=item.delay_s, reason=item.reason,
                                          discard_partial=item.discard_partial, kind=item.kind,
                                          max_attempts=item.max_attempts, **stamp()))
            raise ProviderError("stream_broken", "the provider stream ended without a final message")
        except (Cancelled, asyncio.CancelledError):
            _record_aborted_usage(run, request.messages, "".join(scratch.text) + "".join(thought))
            raise
        except ProviderError as error:
            scratch.streaming = False
            run.deps.metrics.errors[error.kind] += 1
            if error.kind == "context_length" and not compacted_for_length:
                # Said by the compaction's own event when it shortened something; when
                # nothing could be, the error below is all there is to say.
                compacted_for_length = True
                if await run.compact(force=True, reason="context_length"):
                    continue
            if error.kind == "usage_limit":
                planned = run.deps.client.usage_limits.plan(error.resets_at, waited_s=waited_s, waits=waits)
                if planned is not None:
                    # The same request goes again after the reset: the transcript is as it
                    # was, so the tool calls already made are not made again.
                    waits += 1
                    waited_s += planned.wait_s
                    run.emit(UsageLimitWait(until=planned.until, wait_s=planned.wait_s,
                                            reset_known=planned.reset_known, resets_at=error.resets_at,
                                            reason=error.message, attempt=waits, **stamp()))
                    await run.deps.client.usage_limits.wait(planned, run.cancel)
                    continue
            run.emit(Error(message=error.message, kind=error.kind, resets_at=error.resets_at, **stamp()))
            return None


def _record_usage(run: Run, completed: StreamCompleted) -> None:
    deps = run.deps
    run.emit(deps.client.record(completed.usage, deps.metrics, deps.transcript.messages, measured=True,
                                stamp=run.stamp()))


def _with_call_facts(run: Run, completed: StreamCompleted) -> Message:
    """The answer annotated with what its request cost, when and on which model: the
    session keeps it for trajectory exports (``loom export``); no provider sends meta."""
    call = {"model": run.deps.config.model, "usage": completed.usage.to_dict(),
            "cost_usd": run.deps.client.cost_of(completed.usage), "time": time.time()}
    return replace(completed.message, meta={**completed.message.meta, "call": call})


def _record_aborted_usage(run: Run, sent: Sequence[Message], received: str) -> None:
    """An answer stopped mid-stream was still paid for: count an estimate of it.

    The provider reports usage only at the end of a stream, so the request's size is
    estimated from what was sent and the output from what had arrived. A stream stopped
    before any output is not counted (the request may not have reached the model).
    """
    if not received:
        return
    from .context.tokens import estimate_tokens

    deps = run.deps
    sent_tokens, _ = deps.client.context_usage(sent)
    usage = Usage(input_tokens=sent_tokens, output_tokens=estimate_tokens(received))
    run.emit(deps.client.record(usage, deps.metrics, deps.transcript.messages, measured=False, stamp=run.stamp()))


def _with_path_rules(run: Run, results: list[ToolResultPart]) -> list[ToolResultPart]:
    """The results with the ``.claude/rules`` that cover a file first touched in this batch
    added to the last one as a system reminder: at the end of the conversation, so the
    system prompt (the provider's cached prefix) stays as it was."""
    rules = run.deps.path_rules
    if rules is None or not len(rules) or not results:
        return results
    from .context.instructions import render_rules

    note = render_rules(rules.matching(run.deps.tool_contexts.state.read_files))
    if not note:
        return results
    last = results[-1]
    return [*results[:-1], ToolResultPart(last.tool_use_id, f"{last.content}\n\n{note}", last.is_error)]


def _guard_loops(run: Run, calls: Sequence[ToolUsePart], results: list[ToolResultPart]
                 ) -> tuple[list[ToolResultPart], str | None]:
    """Warn when the same call repeats N times in a row; stop the run at 2N."""
    limit = run.deps.config.loop_guard
    if limit <= 0:
        return results, None
    guarded: list[ToolResultPart] = []
    error: str | None = None
    for call, result in zip(calls, results, strict=True):
        signature = call.name + json.dumps(dict(call.input), sort_keys=True, default=str)
        if signature == run.state.inflight.last_call_signature:
            run.state.inflight.repeat_count += 1
        else:
            run.state.inflight.last_call_signature = signature
            run.state.inflight.repeat_count = 1
        count = run.state.inflight.repeat_count
        if count >= 2 * limit and error is None:
            error = (f"stopped: {call.name} was called {count} times in a row with the same arguments "
                     "(loop guard)")
        elif count >= limit:
            result = ToolResultPart(result.tool_use_id, result.content + (
                f"\n\n[Warning: this is call {count} of {call.name} in a row with identical arguments. "
                "Repeating it will not give a different result; change approach.]"), result.is_error)
        guarded.append(result)
    return guarded, error
