"""Anthropic Messages API through the official ``anthropic`` SDK (streaming).

The SDK is imported lazily, so importing Loom stays fast (the TUI draws its first frame
before the SDK has loaded); ``prepare()`` imports it and builds the client in a worker
thread, so that the first request does not import it on the event loop. The client is built with
``max_retries=0``: retries belong to :mod:`loom_engine.providers.retry`, which tells
the UI about them.

Wire conversion happens only here: ``tool`` messages become user messages of
``tool_result`` blocks, consecutive same-role messages merge, empty text is dropped,
signed thinking blocks go back verbatim, and prompt-cache breakpoints sit on the last
tool, the system prompt and the last block of the newest message (3 of the 4 allowed).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import ImagePart, Message, Part, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from ..usage import Usage
from .base import (
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    ProviderRequest,
    StreamCompleted,
    StreamText,
    StreamThinking,
    StreamTimeouts,
    StreamToolUseStart,
)
from .endpoints import API_KEY_VARIABLES, PLACEHOLDER_KEY, is_vendor_url
from .models import lookup
from .retry import parse_retry_after
from .sdk_stream import (
    LoopClient,
    client_options,
    field_of,
    parse_tool_input,
    readable_detail,
    relay,
    sendable_tool_input,
    status_error,
    transport_error,
    unreadable_request,
)
from .server_window import window_in_error
from .usage_limit import anthropic_usage_limit

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_KEY_ENV = API_KEY_VARIABLES["anthropic"]
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


def is_official_anthropic(base_url: str | None) -> bool:
    """Anthropic's own API, which needs a key (a custom endpoint may not)."""
    return is_vendor_url(base_url, "anthropic")

_EPHEMERAL = {"type": "ephemeral"}
# Models on which the SDK asks for adaptive thinking instead of a fixed budget.
_ADAPTIVE_THINKING_PREFIXES = ("claude-opus-4-6", "claude-opus-4-7", "claude-mythos")
_MIN_THINKING_BUDGET = 1024


# --- neutral messages -> wire format --------------------------------------------------


def _convert_part(part: Part, role: str) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        # The API rejects empty and whitespace-only text blocks.
        return {"type": "text", "text": part.text} if part.text.strip() else None
    if isinstance(part, ToolResultPart):
        if role != "user":
            return None
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_use_id}
        if part.content.strip():
            block["content"] = part.content
        if part.is_error:
            block["is_error"] = True
        return block
    if isinstance(part, ToolUsePart):
        if role != "assistant":
            return None
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": sendable_tool_input(part)}
    if isinstance(part, ThinkingPart):
        if role != "assistant":
            return None
        if part.redacted_data:
            return {"type": "redacted_thinking", "data": part.redacted_data}
        if part.signature:
            return {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
        # Unsigned thinking (from another provider or a script) would be rejected.
        return None
    if isinstance(part, ImagePart):
        if role != "user":
            return None
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": part.data}}
    return None


def to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Anthropic ``messages`` (no cache markers)."""
    wire: list[dict[str, Any]] = []
    for msg in messages:
        # tool results and mid-conversation system notes travel as user content.
        role = "assistant" if msg.role == "assistant" else "user"
        blocks = [b for b in (_convert_part(p, role) for p in msg.parts) if b is not None]
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    for entry in wire:
        if entry["role"] == "user":
            # tool_result blocks must come before any other content of the message.
            entry["content"].sort(key=lambda b: b["type"] != "tool_result")
    if wire and wire[0]["role"] != "user":
        wire.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continuing the conversation)"}]})
    return wire


def build_params(request: ProviderRequest) -> dict[str, Any]:
    """Keyword arguments for ``messages.create`` (without ``stream``)."""
    messages = to_wire_messages(request.messages)
    if messages:
        blocks = messages[-1]["content"]
        for block in reversed(blocks):
            if block["type"] not in ("thinking", "redacted_thinking"):
                block["cache_control"] = dict(_EPHEMERAL)
                break
    params: dict[str, Any] = {"model": request.model, "messages": messages, "max_tokens": request.max_tokens}
    if request.system.strip():
        params["system"] = [{"type": "text", "text": request.system, "cache_control": dict(_EPHEMERAL)}]
    if request.tools:
        tools = [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                 for t in request.tools]
        tools[-1]["cache_control"] = dict(_EPHEMERAL)
        params["tools"] = tools
    if request.thinking_budget:
        if request.model.startswith(_ADAPTIVE_THINKING_PREFIXES):
            params["thinking"] = {"type": "adaptive"}
        else:
            budget = max(_MIN_THINKING_BUDGET, request.thinking_budget)
            max_tokens = max(request.max_tokens, budget + _MIN_THINKING_BUDGET)
            info = lookup(request.model)
            if info.known and max_tokens > info.max_output_tokens:
                max_tokens = info.max_output_tokens
                budget = max(_MIN_THINKING_BUDGET, min(budget, max_tokens - _MIN_THINKING_BUDGET))
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
            params["max_tokens"] = max_tokens
    elif request.temperature is not None:
        # With thinking on the API accepts no temperature but the default.
        params["temperature"] = request.temperature
    return params


# --- stream accumulation --------------------------------------------------------------


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    data: str | None = None
    id: str = ""
    name: str = ""
    start_input: Any = None
    json_parts: list[str] = field(default_factory=list)


class StreamAccumulator:
    """Folds raw Messages stream events into normalised events and a final message."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read = 0
        self.cache_write = 0
        self.has_output = False

    def _usage_from(self, usage: Any) -> None:
        if usage is None:
            return
        value = field_of(usage, "input_tokens")
        if value is not None:
            self.input_tokens = int(value)
        value = field_of(usage, "output_tokens")
        if value is not None:
            self.output_tokens = int(value)
        value = field_of(usage, "cache_read_input_tokens")
        if value is not None:
            self.cache_read = int(value)
        value = field_of(usage, "cache_creation_input_tokens")
        if value is not None:
            self.cache_write = int(value)

    def feed(self, event: Any) -> tuple[ProviderEvent, ...]:
        kind = field_of(event, "type")
        if kind == "content_block_delta":
            block = self.blocks.get(int(field_of(event, "index", 0)))
            delta = field_of(event, "delta")
            if block is None or delta is None:
                return ()
            dtype = field_of(delta, "type")
            if dtype == "text_delta":
                text = field_of(delta, "text") or ""
                block.text.append(text)
                if text:
                    self.has_output = True
                    return (StreamText(text),)
            elif dtype == "input_json_delta":
                block.json_parts.append(field_of(delta, "partial_json") or "")
            elif dtype == "thinking_delta":
                text = field_of(delta, "thinking") or ""
                block.text.append(text)
                if text:
                    self.has_output = True
                    return (StreamThinking(text),)
            elif dtype == "signature_delta":
                block.signature = field_of(delta, "signature")
            return ()
        if kind == "content_block_start":
            index = int(field_of(event, "index", 0))
            cb = field_of(event, "content_block")
            btype = str(field_of(cb, "type") or "")
            block = _Block(btype)
            self.blocks[index] = block
            if btype == "tool_use":
                block.id = str(field_of(cb, "id") or "")
                block.name = str(field_of(cb, "name") or "")
                block.start_input = field_of(cb, "input")
                self.has_output = True
                return (StreamToolUseStart(block.id, block.name),)
            if btype == "text":
                initial = field_of(cb, "text") or ""
                if initial:
                    block.text.append(initial)
                    self.has_output = True
                    return (StreamText(initial),)
            elif btype == "thinking":
                initial = field_of(cb, "thinking") or ""
                block.signature = field_of(cb, "signature") or None
                if initial:
                    block.text.append(initial)
                    self.has_output = True
                    return (StreamThinking(initial),)
            elif btype == "redacted_thinking":
                block.data = field_of(cb, "data")
            return ()
        if kind == "message_start":
            # A second message_start (seen from some proxies) restarts the message.
            self.blocks = {}
            self.stop_reason = None
            self._usage_from(field_of(field_of(event, "message"), "usage"))
            return ()
        if kind == "message_delta":
            stop = field_of(field_of(event, "delta"), "stop_reason")
            if stop:
                self.stop_reason = str(stop)
            self._usage_from(field_of(event, "usage"))
            return ()
        return ()

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cache_read, self.cache_write)

    def message(self) -> Message:
        parts: list[Part] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.type == "text":
                text = "".join(block.text)
                if text:
                    parts.append(TextPart(text))
            elif block.type == "thinking":
                parts.append(ThinkingPart("".join(block.text), signature=block.signature))
            elif block.type == "redacted_thinking" and block.data:
                parts.append(ThinkingPart("", redacted_data=block.data))
            elif block.type == "tool_use":
                value, raw = parse_tool_input("".join(block.json_parts), block.start_input)
                parts.append(ToolUsePart(block.id, block.name, value, raw_input=raw))
            # Other block types (server tools, compaction, fallback notes) carry nothing
            # Loom can act on or has to send back.
        return Message.assistant(*parts)

    def completed(self) -> StreamCompleted:
        return StreamCompleted(self.message(), self.stop_reason or "end_turn", self.usage)


# --- errors ---------------------------------------------------------------------------


def _classify_status(status: int | None, etype: str | None, message: str) -> ProviderErrorKind:
    etype = etype or ""
    lowered = message.lower()
    if etype == "overloaded_error" or status == 529:
        return "overloaded"
    if etype == "rate_limit_error" or status == 429:
        return "rate_limit"
    if etype == "authentication_error" or status == 401:
        return "auth"
    if etype in ("permission_error", "billing_error") or status in (402, 403):
        return "permission"
    if etype == "not_found_error" or status == 404:
        return "not_found"
    if etype == "request_too_large" or status == 413:
        # The body exceeded a size limit (the API's or a proxy's): compacting the
        # conversation for the model's window is not what fixes that.
        return "request_too_large"
    # llama.cpp's Anthropic endpoint words an overflow its own way.
    if "prompt is too long" in lowered or etype == "exceed_context_size_error":
        return "context_length"
    if etype == "invalid_request_error" or (status is not None and (400 <= status < 500
                                                                    or unreadable_request(message))):
        return "bad_request"
    if etype == "timeout_error" or status == 504:
        return "timeout"
    return "server"


class AnthropicProvider:
    """Streams requests to the Anthropic Messages API (or a compatible endpoint)."""

    name = "anthropic"

    def __init__(self, api_key: str | None = None, base_url: str | None = None,
                 timeout: float | None = None, stream_timeouts: StreamTimeouts | None = None) -> None:
        self._api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._explicit_base_url = base_url
        if not self._api_key and not is_official_anthropic(self.base_url):
            self._api_key = PLACEHOLDER_KEY
        self._timeout = timeout
        self._stalls = stream_timeouts or StreamTimeouts()
        self._clients = LoopClient(self._new_client)

    @property
    def base_url(self) -> str:
        return (self._explicit_base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")

    def _new_client(self) -> Any:
        if not self._api_key:
            raise ProviderError("config", f"{API_KEY_ENV} is not set; export it or pass an API key")
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(**client_options(self._api_key, self.base_url, self._timeout, self._stalls))

    def prepare(self) -> None:
        """Import the SDK and build the client now (call it from a worker thread), so
        the first request does neither on the caller's event loop."""
        self._clients.prepare()

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        params = build_params(request)
        client = self._clients.get()
        acc = StreamAccumulator()
        events = relay(lambda: client.messages.create(**params, stream=True), acc,
                       finished=lambda: acc.stop_reason is not None,
                       map_error=lambda exc, partial: self._map_error(exc, request, partial),
                       incomplete=f"the Anthropic stream from {self.base_url} ended before the answer was complete",
                       stalls=self._stalls, where=f"Anthropic at {self.base_url}")
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()  # closes the HTTP stream now, not at garbage collection

    def _map_error(self, exc: Exception, request: ProviderRequest, partial: bool) -> ProviderError | None:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code if exc.status_code and exc.status_code >= 400 else None
            etype = exc.type
            detail = readable_detail(exc.api_message or str(exc))
            retry_after = parse_retry_after(exc.response.headers) if status else None
            return status_error(
                _classify_status(status, etype, detail), service="Anthropic",
                where=f"{status} {etype}" if status and etype else (str(status) if status else (etype or "error")),
                detail=detail, model=request.model, base_url=self.base_url,
                key_hint=f"check {API_KEY_ENV}", status=status, retry_after=retry_after, partial=partial,
                context_window=window_in_error(exc.body if isinstance(exc.body, dict) else None, detail),
                usage_limit=anthropic_usage_limit(exc.response.headers, retry_after) if status == 429 else None)
        return transport_error(
            exc, at=f"Anthropic at {self.base_url}", partial=partial,
            timeout=isinstance(exc, anthropic.APITimeoutError),
            connection=isinstance(exc, anthropic.APIConnectionError),
            unreadable=isinstance(exc, anthropic.AnthropicError))
