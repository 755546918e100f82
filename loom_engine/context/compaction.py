"""When and how the history is compacted, for a running agent.

:class:`~.compressor.StructuredCompressor` knows how to shrink a history; this module
decides when (the context use passed the threshold, or the user asked with
``/compact``, or the provider said the request is too long), swaps the transcript for
the compacted one and reports it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..events import AgentEvent, CompactionApplied, Notice
from ..execution import CancelToken
from ..metrics import RunMetrics
from ..model_client import ModelClient
from ..transcript import Transcript

if TYPE_CHECKING:
    from ..hooks.config import HookEventName
    from ..hooks.outcome import HookVerdict
    from ..messages import Message

# Reads the history about to be summarised, while the summary is made (memory promotion
# proposes what is worth keeping from it before the detail is gone). It handles its own
# errors: compaction never fails because of it.
BeforeCompaction = Callable[[Sequence["Message"]], Awaitable[None]]


class FireHooks(Protocol):
    """Runs the user's hooks of an event (PreCompact, PostCompact)."""

    def __call__(self, event: HookEventName, fields: Mapping[str, Any], *,
                 names: tuple[str, ...] = ()) -> Awaitable[HookVerdict]: ...


# Fewer messages than this hold nothing worth summarising.
MIN_MESSAGES = 3


async def compact_history(transcript: Transcript, client: ModelClient, metrics: RunMetrics, *,
                          cancel: CancelToken, emit: Callable[[AgentEvent], None],
                          stamp: Callable[[], Mapping[str, Any]], force: bool = False,
                          reason: str = "auto", focus: str | None = None, hooks: FireHooks | None = None,
                          before: BeforeCompaction | None = None) -> bool:
    """Compact when the context use passed the threshold (or ``force``); True if the
    history changed."""
    used, window = client.context_usage(transcript.messages)
    if not force and used < client.config.compact_threshold * window:
        return False
    if len(transcript) < MIN_MESSAGES:
        return False
    trigger = "manual" if reason == "manual" else "auto"
    if hooks is not None:
        # PreCompact hooks see the history before it is summarised (they may save it).
        await hooks("PreCompact", {"trigger": trigger, "custom_instructions": focus or ""}, names=(trigger,))
    from .compressor import StructuredCompressor

    compressor = StructuredCompressor(client.provider, client.model, client.counter)
    # Side by side with the summary's request, so the reader adds no wait of its own.
    reading = asyncio.ensure_future(before(tuple(transcript.messages))) if before is not None else None
    try:
        result = await compressor.compact(transcript.messages, focus=focus, cancel=cancel)
    except BaseException:
        if reading is not None:
            reading.cancel()
        raise
    if reading is not None:
        await reading
    if result.error:
        emit(Notice(level="warning", message=f"compaction fell back to {result.method}: {result.error}",
                    **stamp()))
    if result.messages == transcript.messages:
        return False
    transcript.replace(result.messages)
    client.after_compaction()
    metrics.compactions += 1
    metrics.compaction_tokens_saved += max(0, result.tokens_before - result.tokens_after)
    emit(CompactionApplied(tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                           method=result.method, reason=reason, **stamp()))
    if hooks is not None:
        await hooks("PostCompact", {"trigger": trigger, "tokens_before": result.tokens_before,
                                    "tokens_after": result.tokens_after}, names=(trigger,))
    return True
