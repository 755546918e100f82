"""OpenAI Chat Completions through the official ``openai`` SDK (streaming).

OpenAI's own API (the default base URL) is spoken over the Responses API instead (see
:mod:`.openai_responses`); ``wire_api`` overrides that choice either way.

Also the adapter for OpenAI-compatible servers - Ollama, vLLM, llama.cpp, LM Studio,
OpenRouter - selected with ``base_url`` or ``OPENAI_BASE_URL``. A local server needs
no real key, so a placeholder is sent when none is configured for a non-OpenAI URL.

The SDK is imported lazily and built with ``max_retries=0`` (see
:mod:`loom_engine.providers.retry`). Thinking parts are never sent to OpenAI; the
``reasoning_content`` / ``reasoning`` deltas some compatible servers stream are shown
as thinking.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
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
from .names import ReasoningEffort, WireApi
from .openai_responses import build_params as responses_params
from .openai_responses import input_item_error, uses_responses
from .openai_responses_stream import ResponsesAccumulator
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
    status_place,
    tool_output_text,
    transport_error,
    unreadable_request,
)
from .server_window import window_in_error
from .usage_limit import openai_usage_limit

DEFAULT_BASE_URL = "https://api.openai.com/v1"
API_KEY_ENV = API_KEY_VARIABLES["openai"]
BASE_URL_ENV = "OPENAI_BASE_URL"

FINISH_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                  "length": "max_tokens", "content_filter": "refusal"}


def is_official_openai(base_url: str | None) -> bool:
    return is_vendor_url(base_url, "openai")


# --- neutral messages -> wire format --------------------------------------------------


def _user_content(parts: Sequence[Part]) -> str | list[dict[str, Any]] | None:
    texts = [p for p in parts if isinstance(p, TextPart) and p.text]
    images = [p for p in parts if isinstance(p, ImagePart)]
    if not images:
        joined = "\n\n".join(p.text for p in texts)
        return joined if joined.strip() else None
    content: list[dict[str, Any]] = [{"type": "text", "text": p.text} for p in texts]
    content += [{"type": "image_url", "image_url": {"url": f"data:{p.media_type};base64,{p.data}"}}
                for p in images]
    return content


def to_wire_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if system.strip():
        wire.append({"role": "system", "content": system})
    for msg in messages:
        if msg.role == "assistant":
            text = "".join(p.text for p in msg.parts if isinstance(p, TextPart))
            calls = [
                {"id": p.id, "type": "function",
                 "function": {"name": p.name,
                              "arguments": json.dumps(sendable_tool_input(p))}}
                for p in msg.parts if isinstance(p, ToolUsePart)
            ]
            if not text.strip() and not calls:
                continue  # thinking-only or empty: nothing OpenAI can take
            entry: dict[str, Any] = {"role": "assistant", "content": text if text.strip() else None}
            if calls:
                entry["tool_calls"] = calls
            wire.append(entry)
            continue
        # Tool results must directly follow the assistant's tool_calls, before any text.
        for part in msg.parts:
            if isinstance(part, ToolResultPart):
                wire.append({"role": "tool", "tool_call_id": part.tool_use_id, "content": tool_output_text(part)})
        rest = [p for p in msg.parts if not isinstance(p, (ToolResultPart, ThinkingPart, ToolUsePart))]
        user_content = _user_content(rest)
        if user_content is None:
            continue
        # Notes the engine adds mid-conversation (role "system") go as user text: the
        # chat templates of many local servers refuse a system message after the first.
        if wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], str) \
                and isinstance(user_content, str):
            wire[-1]["content"] += "\n\n" + user_content
        else:
            wire.append({"role": "user", "content": user_content})
    return wire


def build_params(request: ProviderRequest, *, official: bool) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "messages": to_wire_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # OpenAI's reasoning models refuse ``max_tokens``; compatible servers mostly only
    # know ``max_tokens``.
    params["max_completion_tokens" if official else "max_tokens"] = request.max_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = [{"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": dict(t.input_schema)}}
            for t in request.tools]
    return params


# --- stream accumulation --------------------------------------------------------------


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    announced: bool = False


class ChunkAccumulator:
    """Folds ``chat.completion.chunk`` objects (choice 0) into events and a message."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.refused = False
        self.calls: dict[int, _Call] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.has_output = False

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        usage = field_of(chunk, "usage")
        if usage is not None:
            prompt = int(field_of(usage, "prompt_tokens", 0))
            cached = int(field_of(field_of(usage, "prompt_tokens_details"), "cached_tokens", 0))
            self.usage = Usage(input_tokens=max(0, prompt - cached),
                               output_tokens=int(field_of(usage, "completion_tokens", 0)),
                               cache_read_input_tokens=cached)
        for choice in field_of(chunk, "choices", ()) or ():
            if int(field_of(choice, "index", 0)) != 0:
                continue  # Loom asks for one choice; ignore any others
            delta = field_of(choice, "delta")
            if delta is not None:
                out.extend(self._delta(delta))
            finish = field_of(choice, "finish_reason")
            if finish:
                self.finish_reason = str(finish)
        return out

    def _delta(self, delta: Any) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        reasoning = field_of(delta, "reasoning_content") or field_of(delta, "reasoning")
        if isinstance(reasoning, str) and reasoning:
            self.thinking.append(reasoning)
            out.append(StreamThinking(reasoning))
        content = field_of(delta, "content")
        if content:
            self.text.append(content)
            out.append(StreamText(content))
        refusal = field_of(delta, "refusal")
        if refusal:
            self.refused = True
            self.text.append(refusal)
            out.append(StreamText(refusal))
        for position, tc in enumerate(field_of(delta, "tool_calls", ()) or ()):
            index = field_of(tc, "index")
            # Some compatible servers omit the index on single, complete tool calls.
            key = int(index) if index is not None else len(self.calls) + position
            call = self.calls.setdefault(key, _Call())
            if field_of(tc, "id"):
                call.id = str(field_of(tc, "id"))
            fn = field_of(tc, "function")
            name = field_of(fn, "name")
            if name and not call.name:
                call.name = str(name)
            args = field_of(fn, "arguments")
            if args:
                call.arguments.append(str(args))
            if call.name and not call.announced:
                if not call.id:
                    call.id = "call_" + uuid.uuid4().hex[:24]
                call.announced = True
                out.append(StreamToolUseStart(call.id, call.name))
        if out:
            self.has_output = True
        return out

    @property
    def stop_reason(self) -> str:
        if self.refused:
            return "refusal"
        reason = self.finish_reason or "stop"
        return FINISH_REASONS.get(reason, reason)

    def message(self) -> Message:
        parts: list[Part] = []
        if self.thinking:
            parts.append(ThinkingPart("".join(self.thinking)))
        text = "".join(self.text)
        if text:
            parts.append(TextPart(text))
        for key in sorted(self.calls):
            call = self.calls[key]
            if not call.name:
                continue
            value, raw = parse_tool_input("".join(call.arguments))
            parts.append(ToolUsePart(call.id or "call_" + uuid.uuid4().hex[:24], call.name, value, raw_input=raw))
        return Message.assistant(*parts)

    def completed(self) -> StreamCompleted:
        return StreamCompleted(self.message(), self.stop_reason, self.usage)


# --- errors ---------------------------------------------------------------------------


def _classify(status: int | None, etype: str, code: str, message: str) -> ProviderErrorKind:
    lowered = message.lower()
    if status == 413:
        return "request_too_large"
    if (code == "context_length_exceeded" or "exceed_context_size" in etype
            or "context length" in lowered or "context size" in lowered):
        return "context_length"
    if status == 401 or code == "invalid_api_key":
        return "auth"
    if status == 403:
        return "permission"
    if status == 404 or code == "model_not_found":
        return "not_found"
    if status == 429 or "rate_limit" in etype or "rate_limit" in code:
        return "rate_limit"
    if status == 529 or "overloaded" in etype or "overloaded" in lowered:
        return "overloaded"
    if status == 504 or "timeout" in etype:
        return "timeout"
    if status is not None and (400 <= status < 500 or unreadable_request(message)):
        return "bad_request"
    if status is None and etype == "invalid_request_error":
        return "bad_request"
    return "server"


def _response_text(response: Any) -> str:
    try:
        return str(response.text)
    except Exception:  # a streamed or undecodable body: the status line will have to do
        return ""


class OpenAIProvider:
    """Streams requests to OpenAI Chat Completions or an OpenAI-compatible server."""

    name = "openai"

    def __init__(self, api_key: str | None = None, base_url: str | None = None,
                 timeout: float | None = None, stream_timeouts: StreamTimeouts | None = None,
                 wire_api: WireApi = "auto", reasoning_effort: ReasoningEffort | None = None) -> None:
        self._explicit_base_url = base_url
        self._wire_api = wire_api
        self._reasoning_effort = reasoning_effort
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key and not is_official_openai(self.base_url):
            key = PLACEHOLDER_KEY
        self._api_key = key
        self._timeout = timeout
        self._stalls = stream_timeouts or StreamTimeouts()
        self._clients = LoopClient(self._new_client)

    @property
    def base_url(self) -> str:
        return (self._explicit_base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")

    @property
    def official(self) -> bool:
        return is_official_openai(self.base_url)

    @property
    def wire(self) -> str:
        """What this provider's requests go over: "responses" or "chat"."""
        return "responses" if uses_responses(self._wire_api, self.official) else "chat"

    def _new_client(self) -> Any:
        if not self._api_key:
            raise ProviderError("config", f"{API_KEY_ENV} is not set; export it, or set {BASE_URL_ENV} "
                                          "to a local OpenAI-compatible server")
        from openai import AsyncOpenAI

        return AsyncOpenAI(**client_options(self._api_key, self.base_url, self._timeout, self._stalls))

    def prepare(self) -> None:
        """Import the SDK and build the client now (call it from a worker thread), so
        the first request does neither on the caller's event loop."""
        self._clients.prepare()
        if self.wire == "responses":
            # The SDK loads its Responses resource at first use (~50 ms): here, not then.
            import openai.resources.responses  # noqa: F401

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        client = self._clients.get()
        events = self._responses(client, request) if self.wire == "responses" else self._chat(client, request)
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()  # closes the HTTP stream now, not at garbage collection

    def _chat(self, client: Any, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        params = build_params(request, official=self.official)
        acc = ChunkAccumulator()
        return relay(lambda: client.chat.completions.create(**params), acc,
                     finished=lambda: acc.finish_reason is not None,
                     map_error=lambda exc, partial: self._map_error(exc, request, partial),
                     incomplete=f"the stream from {self.base_url} ended before the answer was complete",
                     stalls=self._stalls, where=self.base_url)

    def _responses(self, client: Any, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        params = responses_params(request, endpoint=self.base_url, effort=self._reasoning_effort)
        acc = ResponsesAccumulator(endpoint=self.base_url, model=request.model, classify=_classify,
                                   service="OpenAI" if self.official else f"the server at {self.base_url}")
        return relay(lambda: client.responses.create(**params), acc,
                     finished=lambda: acc.finished,
                     map_error=lambda exc, partial: input_item_error(self._map_error(exc, request, partial)),
                     incomplete=f"the stream from {self.base_url} ended before the response was complete",
                     stalls=self._stalls, where=self.base_url)

    def _map_error(self, exc: Exception, request: ProviderRequest, partial: bool) -> ProviderError | None:
        import openai

        base = self.base_url
        if isinstance(exc, openai.APIStatusError) or (
                isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIConnectionError)):
            status = getattr(exc, "status_code", None)
            body = exc.body if isinstance(exc.body, dict) else {}
            etype = str(exc.type or body.get("type") or "")
            code = str(exc.code or body.get("code") or "")
            response = getattr(exc, "response", None)
            # A body that is not the API's JSON (a proxy's HTML page) is only in the response.
            page = exc.body if isinstance(exc.body, str) else (
                _response_text(response) if not body and response is not None else "")
            detail = readable_detail(str(body.get("message") or page or exc.message or exc))
            return status_error(
                _classify(status, etype, code, detail),
                service="OpenAI" if self.official else f"the server at {base}",
                where=status_place(status, code),
                detail=detail, model=request.model, base_url=base,
                key_hint=f"check {API_KEY_ENV}" if self.official else f"check the API key ({API_KEY_ENV}) for {base}",
                status=status,
                retry_after=parse_retry_after(response.headers) if response is not None and status else None,
                partial=partial, context_window=window_in_error(body, detail),
                usage_limit=openai_usage_limit(code, etype, body))
        return transport_error(
            exc, at=base, partial=partial,
            timeout=isinstance(exc, openai.APITimeoutError),
            connection=isinstance(exc, openai.APIConnectionError),
            unreadable=isinstance(exc, openai.OpenAIError))
