"""OpenAI's Responses API: folding the event stream into Loom's events and message.

Events by ``output_index``: reasoning summaries stream as thinking, output text as
text, a ``function_call`` item announces a tool call and its arguments stream after.
Each item is taken as ``response.output_item.done`` gives it (a reasoning item's
``encrypted_content`` there is the one to replay; the ``added`` event's differs). The
stream ends with ``response.completed``, ``response.incomplete`` (a length cut-off
is stop reason ``max_tokens``) or ``response.failed`` (raised as a ProviderError).
Item kinds Loom never asks for (hosted tools, custom tools) are not kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import Message, Part, TextPart, ThinkingPart, ToolUsePart
from ..usage import Usage
from .base import (
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    StreamCompleted,
    StreamText,
    StreamThinking,
    StreamToolUseStart,
)
from .endpoints import API_KEY_VARIABLES
from .openai_responses import provider_data
from .sdk_stream import field_of, parse_tool_input, readable_detail, status_error

# ``incomplete_details.reason`` -> Loom's stop reason.
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}
_SUMMARY_GAP = "\n\n"  # between a reasoning item's summary parts

# How an OpenAI error is classified: (status, type, code, message) -> kind. The provider
# passes its own, so that an error in the stream is classed as the same error over HTTP.
Classify = Callable[[int | None, str, str, str], ProviderErrorKind]


def as_json(obj: Any) -> dict[str, Any]:
    """An SDK model (or the dict a compatible server's event held) as the JSON the server
    sent: only the fields it set, extra fields included."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    dumped = obj.to_dict(mode="json")
    return dict(dumped) if isinstance(dumped, Mapping) else {}


@dataclass
class _Item:
    type: str
    id: str = ""
    call_id: str = ""
    name: str = ""
    text: list[str] = field(default_factory=list)
    summary: dict[int, list[str]] = field(default_factory=dict)
    arguments: list[str] = field(default_factory=list)
    refused: bool = False
    done: dict[str, Any] | None = None  # the item as output_item.done gave it


class ResponsesAccumulator:
    """Folds Responses stream events into normalised events and a final message."""

    def __init__(self, *, endpoint: str, model: str, service: str, classify: Classify) -> None:
        self.endpoint = endpoint
        self.model = model
        self.service = service  # who answered, for error lines ("OpenAI")
        self._classify = classify
        self.items: dict[int, _Item] = {}
        self.status: str | None = None
        self.incomplete_reason: str | None = None
        self.usage = Usage()
        self.has_output = False

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "incomplete")

    def feed(self, event: Any) -> list[ProviderEvent]:
        kind = str(field_of(event, "type") or "")
        index = int(field_of(event, "output_index", 0))
        out: list[ProviderEvent] = []
        if kind == "response.output_item.added":
            out.extend(self._added(index, field_of(event, "item")))
        elif kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = str(field_of(event, "delta") or "")
            item = self.items.setdefault(index, _Item("message"))
            item.refused = item.refused or kind == "response.refusal.delta"
            if delta:
                item.text.append(delta)
                out.append(StreamText(delta))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            delta = str(field_of(event, "delta") or "")
            item = self.items.setdefault(index, _Item("reasoning"))
            part = int(field_of(event, "summary_index", field_of(event, "content_index", 0)))
            if delta:
                if part not in item.summary and item.summary:
                    out.append(StreamThinking(_SUMMARY_GAP))
                item.summary.setdefault(part, []).append(delta)
                out.append(StreamThinking(delta))
        elif kind == "response.function_call_arguments.delta":
            item = self.items.setdefault(index, _Item("function_call"))
            item.arguments.append(str(field_of(event, "delta") or ""))
        elif kind == "response.output_item.done":
            out.extend(self._done(index, as_json(field_of(event, "item"))))
        elif kind in ("response.completed", "response.incomplete"):
            response = field_of(event, "response")
            self.status = str(field_of(response, "status") or kind.rpartition(".")[2])
            self.incomplete_reason = field_of(field_of(response, "incomplete_details"), "reason")
            self._usage_from(field_of(response, "usage"))
        elif kind == "response.failed":
            raise self._failure(field_of(field_of(event, "response"), "error"))
        elif kind == "error":  # the SDK raises these itself; a plain-dict stream may not
            raise self._failure(field_of(event, "error") or event)
        if out:
            self.has_output = True
        return out

    def _added(self, index: int, raw: Any) -> list[ProviderEvent]:
        item = _Item(str(field_of(raw, "type") or ""), id=str(field_of(raw, "id") or ""))
        self.items[index] = item
        if item.type == "function_call":
            item.call_id = str(field_of(raw, "call_id") or "") or "call_" + uuid.uuid4().hex[:24]
            item.name = str(field_of(raw, "name") or "")
            initial = field_of(raw, "arguments")
            if initial:
                item.arguments.append(str(initial))
            return [StreamToolUseStart(item.call_id, item.name)]
        return []

    def _done(self, index: int, done: dict[str, Any]) -> list[ProviderEvent]:
        item = self.items.get(index)
        if item is None:  # no added event came (a compatible server): the done item says it all
            item = self.items[index] = _Item(str(done.get("type") or ""), id=str(done.get("id") or ""))
        item.done = done
        out: list[ProviderEvent] = []
        if item.type == "function_call":
            if not item.name:
                item.call_id = str(done.get("call_id") or item.call_id or "call_" + uuid.uuid4().hex[:24])
                item.name = str(done.get("name") or "")
                out.append(StreamToolUseStart(item.call_id, item.name))
            if isinstance(done.get("arguments"), str):
                item.arguments = [done["arguments"]]  # the whole, as the server has it
        elif item.type == "message":
            whole = "".join(str(c.get("text") or c.get("refusal") or "") for c in done.get("content") or ()
                            if isinstance(c, Mapping))
            streamed = "".join(item.text)
            # The done item has the whole text: what the deltas left out is shown now.
            if whole.startswith(streamed) and len(whole) > len(streamed):
                out.append(StreamText(whole[len(streamed):]))
            if whole:
                item.text = [whole]
        return out

    def _usage_from(self, usage: Any) -> None:
        if usage is None:
            return
        prompt = int(field_of(usage, "input_tokens", 0))
        cached = int(field_of(field_of(usage, "input_tokens_details"), "cached_tokens", 0))
        reasoning = int(field_of(field_of(usage, "output_tokens_details"), "reasoning_tokens", 0))
        self.usage = Usage(input_tokens=max(0, prompt - cached), output_tokens=int(field_of(usage, "output_tokens", 0)),
                           cache_read_input_tokens=cached, reasoning_tokens=reasoning)

    def _failure(self, error: Any) -> ProviderError:
        code = str(field_of(error, "code") or "")
        etype = str(field_of(error, "type") or "")
        detail = readable_detail(str(field_of(error, "message") or "the response failed"))
        return status_error(self._classify(None, etype, code, detail), service=self.service,
                            where=f"in-stream error{' ' + code if code else ''}", detail=detail, model=self.model,
                            base_url=self.endpoint, key_hint=f"check {API_KEY_VARIABLES['openai']}", status=None,
                            retry_after=None, partial=self.has_output)

    # -- the result --

    @property
    def stop_reason(self) -> str:
        if self.status == "incomplete":
            reason = str(self.incomplete_reason or "")
            return INCOMPLETE_REASONS.get(reason, reason or "max_tokens")
        if any(item.refused for item in self.items.values()):
            return "refusal"
        if any(item.type == "function_call" and item.name for item in self.items.values()):
            return "tool_use"
        return "end_turn"

    def message(self) -> Message:
        parts: list[Part] = []
        for index in sorted(self.items):
            item = self.items[index]
            if item.type == "reasoning":
                thinking = _SUMMARY_GAP.join("".join(item.summary[k]) for k in sorted(item.summary))
                done = item.done or {}
                if not thinking:
                    thinking = _SUMMARY_GAP.join(str(s.get("text") or "") for s in done.get("summary") or ()
                                                 if isinstance(s, Mapping))
                if thinking or done.get("encrypted_content"):
                    data = provider_data(self.endpoint, done) if done else None
                    parts.append(ThinkingPart(thinking, provider_data=data))
            elif item.type == "message":
                text = "".join(item.text)
                if text:
                    kept = {k: v for k, v in (item.done or {}).items() if k in ("id", "phase")}
                    parts.append(TextPart(text, provider_data=provider_data(self.endpoint, kept) if kept else None))
            elif item.type == "function_call" and item.name:
                value, raw = parse_tool_input("".join(item.arguments))
                parts.append(ToolUsePart(item.call_id, item.name, value, raw_input=raw))
        return Message.assistant(*parts)

    def completed(self) -> StreamCompleted:
        return StreamCompleted(self.message(), self.stop_reason, self.usage)
