"""Compaction: make a long history small again without losing the thread.

Public API
----------
``StructuredCompressor(provider, model, counter=None, *, max_summary_tokens=4000,
elide_over_chars=2000, max_input_tokens=100_000)``
    ``await compact(messages, *, focus=None, cancel=None, keep_recent_tokens=None,
    target_tokens=None) -> CompactionResult``
``CompactionResult``  frozen: ``messages``, ``tokens_before``, ``tokens_after``,
    ``method`` ("summary" | "elide" | "trim" | "none"), ``summary_text``, ``error``
    (why the summary was not used), ``ratio``.
``elide_tool_outputs(messages, *, over_chars=2000)``  bulky tool outputs (and bulky
    tool-call arguments) replaced by one-line notes.
``split_point(messages, counter, keep_recent_tokens)``  where the kept recent part starts.
``render_transcript(messages)``  the plain-text transcript the summariser reads.

How ``compact`` works
---------------------
1. The history is split at a safe boundary: the kept recent part (about
   ``keep_recent_tokens``; default the smaller of 20,000 and 30% of the history) starts
   with an assistant message or a user message that is not a tool result, so every
   tool call stays with its results — parallel calls included.
2. In the older part, tool outputs over ``elide_over_chars`` become one-line notes such
   as ``[elided: 1,234 lines of read_file output for src/a.py]``.
3. One LLM call, without tools, reads that part as a plain-text transcript and writes
   the eight-section summary (``prompts.COMPACTION_SECTIONS``). The history becomes one
   user message (meta ``{"summary": True}``) holding the summary — plus the user's
   latest request verbatim when it was in the summarised part — followed by the recent
   messages, unchanged.
4. The summary is refused when the call fails (ProviderError or any other exception),
   the answer is empty, cut off at the token limit, over twice ``max_summary_tokens``
   (a provider that ignores the limit), not smaller than what it replaces,
   or has fewer than half of the eight section headings (a few missing sections still
   make a useful summary; fewer than four means the model did something else). Then
   the fallback runs: the elided older part plus the recent part ("elide") when that
   reaches ``target_tokens`` (default half the history), else the oldest chunks are
   dropped at safe boundaries behind a note saying so ("trim").

Whatever happens, the result passes ``transcript_problems``; a history that cannot be
made smaller comes back unchanged with method "none". Cancellation raises
``Cancelled``. Token figures count the messages only (system prompt and tools are the
same before and after).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..execution import Cancelled, CancelToken
from ..messages import ImagePart, Message, Part, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from ..providers.base import Provider, ProviderError, ProviderRequest, StreamCompleted, StreamText
from .prompts import COMPACTION_SECTIONS, COMPACTION_SYSTEM, compaction_prompt, summary_message_text
from .tokens import TokenCounter
from .validity import repair_transcript, transcript_problems

DEFAULT_KEEP_RECENT_TOKENS = 20_000
KEEP_RECENT_SHARE = 0.3
MIN_SECTIONS = 4
LATEST_REQUEST_CHARS = 4000


@dataclass(frozen=True)
class CompactionResult:
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    method: str  # "summary" | "elide" | "trim" | "none"
    summary_text: str | None = None
    error: str | None = None

    @property
    def ratio(self) -> float:
        """Tokens after / tokens before (smaller is better)."""
        return self.tokens_after / self.tokens_before if self.tokens_before else 1.0


class _SummaryRefused(Exception):
    """The model's answer cannot stand in for the history."""


class StructuredCompressor:
    def __init__(self, provider: Provider, model: str, counter: TokenCounter | None = None, *,
                 max_summary_tokens: int = 4000, elide_over_chars: int = 2000,
                 max_input_tokens: int = 100_000) -> None:
        self.provider = provider
        self.model = model
        self.counter = counter or TokenCounter(model)
        self.max_summary_tokens = max_summary_tokens
        self.elide_over_chars = elide_over_chars
        self.max_input_tokens = max_input_tokens

    async def compact(self, messages: Sequence[Message], *, focus: str | None = None,
                      cancel: CancelToken | None = None, keep_recent_tokens: int | None = None,
                      target_tokens: int | None = None) -> CompactionResult:
        original = tuple(messages)
        history = repair_transcript(original)
        before = self.counter.count_messages(original)
        keep = keep_recent_tokens if keep_recent_tokens is not None else min(
            DEFAULT_KEEP_RECENT_TOKENS, int(before * KEEP_RECENT_SHARE))
        target = target_tokens if target_tokens is not None else max(keep, before // 2)
        split = split_point(history, self.counter, keep)
        if split is None:
            return CompactionResult(original, before, before, "none", error="nothing to compact")
        head, tail = history[:split], history[split:]
        elided_head = elide_tool_outputs(head, over_chars=self.elide_over_chars)

        error: str
        try:
            summary = await self._summarise(elided_head, focus, cancel)
            compacted = (self._summary_message(summary, head, tail), *tail)
            after = self.counter.count_messages(compacted)
            if after >= before:
                raise _SummaryRefused("the summary did not make the history smaller")
            if not transcript_problems(compacted):
                return CompactionResult(compacted, before, after, "summary", summary_text=summary)
            error = "the summarised history was not a valid transcript"
        except (Cancelled, asyncio.CancelledError):
            raise
        except _SummaryRefused as refused:
            error = str(refused)
        except ProviderError as failure:
            error = f"the summary request failed ({failure.kind}): {failure}"
        except Exception as failure:  # a provider bug must not take the session down
            error = f"the summary request failed: {type(failure).__name__}: {failure}"
        return self._fallback(original, history, elided_head + tail, before, target, error)

    # --- the LLM summary -----------------------------------------------------------------

    async def _summarise(self, head: Sequence[Message], focus: str | None,
                         cancel: CancelToken | None) -> str:
        if cancel is not None:
            cancel.raise_if_cancelled()
        transcript = self._fit_transcript(head)
        words = max(200, int(self.max_summary_tokens * 0.4))  # leaves room below max_tokens
        request = ProviderRequest(model=self.model, system=COMPACTION_SYSTEM,
                                  messages=(Message.user(compaction_prompt(transcript, focus, words)),),
                                  tools=(), max_tokens=self.max_summary_tokens)
        text, stop_reason = await _collect(self.provider, request, cancel)
        text = text.strip()
        if not text:
            raise _SummaryRefused("the model returned an empty summary")
        if stop_reason == "max_tokens":
            raise _SummaryRefused("the summary was cut off at the token limit")
        found = sections_present(text)
        if len(found) < MIN_SECTIONS:
            raise _SummaryRefused(f"the summary has only {len(found)} of the "
                                  f"{len(COMPACTION_SECTIONS)} required sections")
        size = self.counter.count_text(text)
        if size > 2 * self.max_summary_tokens:
            # The provider ignored max_tokens; such a summary would eat the space it frees.
            raise _SummaryRefused(f"the summary is too long ({size:,} tokens; the limit is "
                                  f"{self.max_summary_tokens:,})")
        if size >= self.counter.count_messages(head):
            raise _SummaryRefused("the summary is longer than the messages it replaces")
        return text

    def _fit_transcript(self, head: Sequence[Message]) -> str:
        """The transcript of ``head``, dropping its oldest messages if it is too long to send."""
        names = {u.id: u.name for m in head for u in m.tool_uses}
        blocks = [render_message(m, names) for m in head]
        budget = self.max_input_tokens
        kept: list[str] = []
        used = 0
        for block in reversed(blocks):
            cost = self.counter.count_text(block)
            if kept and used + cost > budget:
                break
            kept.append(block)
            used += cost
        kept.reverse()
        omitted = len(blocks) - len(kept)
        if omitted:
            kept.insert(0, f"[{omitted} earlier messages omitted: too long to summarise]")
        return "\n\n".join(kept)

    def _summary_message(self, summary: str, head: Sequence[Message], tail: Sequence[Message]) -> Message:
        text = summary_message_text(summary, len(head))
        if not any(_is_user_request(m) for m in tail):
            latest = next((m for m in reversed(head) if _is_user_request(m)), None)
            if latest is not None:
                # What the user typed, without the files it attached (see attachments.py).
                request = str(latest.meta.get("prompt", latest.text)).strip()
                if len(request) > LATEST_REQUEST_CHARS:
                    request = request[:LATEST_REQUEST_CHARS].rstrip() + " [... cut]"
                text += "\n\nThe user's latest request, verbatim:\n" + _quote(request)
        return Message.user(text, summary=True)

    # --- the fallback ----------------------------------------------------------------------

    def _fallback(self, original: tuple[Message, ...], history: tuple[Message, ...],
                  elided: tuple[Message, ...], before: int, target: int, error: str) -> CompactionResult:
        after = self.counter.count_messages(elided)
        if after < before and after <= target and not transcript_problems(elided):
            return CompactionResult(elided, before, after, "elide", error=error)
        boundaries = _boundaries(elided)
        best: tuple[Message, ...] | None = None
        for start in boundaries:
            note = Message.user(
                f"[Earlier conversation trimmed: the first {start} messages were removed to free "
                f"context space, because they could not be summarised ({error}). If something from "
                "that part is needed, ask the user or look it up again.]", trimmed=True)
            candidate = (note, *elided[start:])
            best = candidate
            if self.counter.count_messages(candidate) <= target:
                break
        if best is not None:
            if transcript_problems(best):
                best = repair_transcript(best)
            best_tokens = self.counter.count_messages(best)
            if best_tokens < before:
                return CompactionResult(best, before, best_tokens, "trim", error=error)
        if after < before and not transcript_problems(elided):
            return CompactionResult(elided, before, after, "elide", error=error)
        if history != original:
            # Only the repair changed anything; still better than an invalid transcript.
            return CompactionResult(history, before, self.counter.count_messages(history), "none", error=error)
        return CompactionResult(original, before, before, "none", error=error)


async def _collect(provider: Provider, request: ProviderRequest, cancel: CancelToken | None) -> tuple[str, str]:
    """The answer's text and stop reason; an abort closes the stream and raises Cancelled."""
    stream = provider.stream(request)
    chunks: list[str] = []

    async def consume() -> StreamCompleted | None:
        async for event in stream:
            if isinstance(event, StreamText):
                chunks.append(event.text)
            elif isinstance(event, StreamCompleted):
                return event
        return None

    reader = asyncio.ensure_future(consume())
    waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        if waiter is not None:
            await asyncio.wait({reader, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
                raise Cancelled(cancel.reason if cancel is not None else "cancelled")
        completed = await reader
    finally:
        if waiter is not None:
            waiter.cancel()
        if not reader.done():
            reader.cancel()
        closer = getattr(stream, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
    if completed is None:
        raise _SummaryRefused("the summary stream ended without completing")
    text = completed.message.text or "".join(chunks)
    return text, completed.stop_reason


_HEADING = re.compile(r"^[ \t]*(?:#{1,6}[ \t]*|\*\*)?(?:\d+[.)][ \t]*)?"
                      r"(?P<name>[A-Za-z][A-Za-z ]+?)[ \t]*(?:\*\*)?:?[ \t]*$",
                      re.MULTILINE)


def sections_present(summary: str) -> list[str]:
    """Which of the eight section names appear as headings (or bold lines) in ``summary``."""
    seen = {m.group("name").strip().lower() for m in _HEADING.finditer(summary)}
    return [name for name in COMPACTION_SECTIONS if name.lower() in seen]


# --- splitting ------------------------------------------------------------------------------

def _is_results(message: Message) -> bool:
    return any(isinstance(p, ToolResultPart) for p in message.parts)


def _is_user_request(message: Message) -> bool:
    return (message.role == "user" and not _is_results(message) and bool(message.text.strip())
            and not any(message.meta.get(k) for k in ("summary", "trimmed", "interruption", "reminder",
                                                      "user_command")))


def _safe_start(messages: Sequence[Message], index: int) -> bool:
    """May a kept part start at ``index``? Never on a tool result, never cutting a call from its results."""
    message = messages[index]
    previous = messages[index - 1]
    if previous.role == "assistant" and previous.tool_uses:
        return False
    if message.role == "assistant":
        return True
    return message.role == "user" and not _is_results(message)


def _boundaries(messages: Sequence[Message]) -> list[int]:
    return [i for i in range(1, len(messages)) if _safe_start(messages, i)]


def split_point(messages: Sequence[Message], counter: TokenCounter, keep_recent_tokens: int) -> int | None:
    """Start of the kept recent part: the longest safe tail within ``keep_recent_tokens``.

    When even the shortest safe tail is larger, that one is kept. None when there is no
    safe boundary (nothing before it could be compacted).
    """
    boundaries = _boundaries(messages)
    if not boundaries:
        return None
    suffix = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counter.count_message(messages[i])
    for index in boundaries:
        if suffix[index] <= keep_recent_tokens:
            return index
    return boundaries[-1]


# --- eliding --------------------------------------------------------------------------------

_TARGET_KEYS = ("path", "file_path", "command", "pattern", "description", "name", "url", "query")


def _call_target(use: ToolUsePart | None) -> str:
    if use is None:
        return ""
    value: Any = None
    for key in _TARGET_KEYS:
        if isinstance(use.input.get(key), str) and use.input[key].strip():
            value = use.input[key]
            if key == "pattern" and isinstance(use.input.get("path"), str) and use.input["path"] not in ("", "."):
                value = f"{value} in {use.input['path']}"
            break
    if value is None:
        value = next((v for v in use.input.values() if isinstance(v, str) and v.strip()), "")
    target = " ".join(str(value).split())
    return target if len(target) <= 80 else target[:77] + "..."


def _size(text: str) -> str:
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return f"{lines:,} lines" if lines > 1 else f"{len(text):,} characters"


def elide_tool_outputs(messages: Sequence[Message], *, over_chars: int = 2000) -> tuple[Message, ...]:
    """Tool outputs and tool-call string arguments over ``over_chars`` become one-line notes."""
    calls: dict[str, ToolUsePart] = {}
    for message in messages:
        for use in message.tool_uses:
            calls[use.id] = use
    out: list[Message] = []
    for message in messages:
        parts: list[Part] = []
        changed = False
        for part in message.parts:
            if isinstance(part, ToolResultPart) and len(part.content) > over_chars:
                call = calls.get(part.tool_use_id)
                name = call.name if call is not None else "tool"
                target = _call_target(call)
                kind = "error output" if part.is_error else "output"
                note = f"[elided: {_size(part.content)} of {name} {kind}" + (f" for {target}]" if target else "]")
                parts.append(replace(part, content=note))
                changed = True
            elif isinstance(part, ToolUsePart) and _has_long_string(part.input, over_chars):
                parts.append(replace(part, input=_elide_arguments(part.input, over_chars), raw_input=None))
                changed = True
            else:
                parts.append(part)
        out.append(replace(message, parts=tuple(parts)) if changed else message)
    return tuple(out)


def _has_long_string(value: Any, limit: int) -> bool:
    if isinstance(value, str):
        return len(value) > limit
    if isinstance(value, Mapping):
        return any(_has_long_string(v, limit) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_long_string(v, limit) for v in value)
    return False


def _elide_arguments(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return f"[elided: {_size(value)}]" if len(value) > limit else value
    if isinstance(value, Mapping):
        return {k: _elide_arguments(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_elide_arguments(v, limit) for v in value]
    return value


# --- the transcript the summariser reads ------------------------------------------------------

RENDER_RESULT_CHARS = 2000
RENDER_ARGUMENT_CHARS = 600


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters not shown ...]\n{text[-half:]}"


def render_message(message: Message, names: Mapping[str, str] | None = None) -> str:
    if message.meta.get("summary"):
        header = "[Earlier summary]"
    elif _is_results(message):
        header = "[Tool results]"
    else:
        header = f"[{message.role.capitalize()}]"
    lines = [header]
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(part.text.strip())
        elif isinstance(part, ToolUsePart):
            arguments = json.dumps(dict(part.input), ensure_ascii=False, default=str)
            lines.append(f"-> {part.name} {_clip(arguments, RENDER_ARGUMENT_CHARS)}")
        elif isinstance(part, ToolResultPart):
            name = (names or {}).get(part.tool_use_id, "tool")
            status = " (error)" if part.is_error else ""
            lines.append(f"<- {name}{status}:\n{_clip(part.content, RENDER_RESULT_CHARS)}")
        elif isinstance(part, ImagePart):
            lines.append("[an image]")
        elif isinstance(part, ThinkingPart):
            continue  # private reasoning: bulky, and the outcome shows in the text anyway
    return "\n".join(lines)


def render_transcript(messages: Sequence[Message]) -> str:
    names = {u.id: u.name for m in messages for u in m.tool_uses}
    return "\n\n".join(render_message(m, names) for m in messages)


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines())
