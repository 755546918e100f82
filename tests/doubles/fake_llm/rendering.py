"""Rendering a :class:`Reply` in the real wire formats: Anthropic and OpenAI SSE streams, JSON bodies, error bodies."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .scenario import Reply, ToolCall

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
    429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "api_error",
    504: "timeout_error", 529: "overloaded_error",
}
_ANTHROPIC_ERROR_MESSAGES = {
    "invalid_request_error": "Invalid request", "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error", "overloaded_error": "Overloaded",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
}
_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                  "refusal": "content_filter", "stop_sequence": "stop"}
_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
                   "content_filter": "refusal"}


def _pieces(text: str, size: int) -> list[str]:
    if not text:
        return []
    if size <= 0:
        return [text]
    return [text[i:i + size] for i in range(0, len(text), size)]


def _sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


@dataclass(frozen=True)
class _Usage:
    input: int
    output: int
    cache_read: int
    cache_write: int


def _usage_for(reply: Reply, request_raw: bytes) -> _Usage:
    given = dict(reply.usage or {})
    out_default = max(1, (len(reply.text) + len(reply.thinking)
                          + sum(len(c.arguments()) for c in reply.tool_calls)) // 4)
    return _Usage(
        input=int(given.get("input_tokens", max(1, len(request_raw) // 4))),
        output=int(given.get("output_tokens", out_default)),
        cache_read=int(given.get("cache_read_input_tokens", 0)),
        cache_write=int(given.get("cache_creation_input_tokens", 0)),
    )


class _Renderer:
    """Turns a Reply into a response for one API."""

    def __init__(self, reply: Reply, body: Mapping[str, Any], raw: bytes, serial: int) -> None:
        self.reply = reply
        self.body = body
        self.usage = _usage_for(reply, raw)
        self.serial = serial
        self.model = reply.model or str(body.get("model") or "fake-model")

    # Anthropic ------------------------------------------------------------------

    def anthropic_stop(self) -> str:
        sr = self.reply.stop_reason
        if sr:
            return _ANTHROPIC_STOP.get(sr, sr)
        return "tool_use" if self.reply.tool_calls else "end_turn"

    def anthropic_tool_id(self, k: int, call: ToolCall) -> str:
        return call.id or f"toolu_fake{self.serial:04d}{k:02d}"

    def anthropic_events(self) -> Iterator[bytes]:
        r = self.reply
        u = self.usage
        yield _sse("message_start", {"type": "message_start", "message": {
            "id": f"msg_fake{self.serial:06d}", "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": u.input, "cache_creation_input_tokens": u.cache_write,
                      "cache_read_input_tokens": u.cache_read, "output_tokens": 1}}})
        yield _sse("ping", {"type": "ping"})
        index = 0
        if r.thinking:
            block = {"type": "thinking", "thinking": "", "signature": ""}
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": block})
            for piece in _pieces(r.thinking, r.chunk_size):
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "thinking_delta", "thinking": piece}})
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "signature_delta", "signature": r.signature}})
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        if r.redacted_thinking:
            block = {"type": "redacted_thinking", "data": r.redacted_thinking}
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": block})
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        if r.text:
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}})
            for piece in _pieces(r.text, r.chunk_size):
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}})
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for k, call in enumerate(r.tool_calls):
            yield _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": self.anthropic_tool_id(k, call), "name": call.name, "input": {}}})
            # The real API opens every tool input with an empty fragment.
            for piece in ["", *_pieces(call.arguments(), max(r.chunk_size, 1))]:
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": piece}})
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        if r.stream_error:
            kind, message = r.stream_error
            yield _sse("error", {"type": "error", "error": {"type": kind, "message": message}})
            return
        yield _sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": self.anthropic_stop(), "stop_sequence": None},
                                     "usage": {"output_tokens": u.output}})
        yield _sse("message_stop", {"type": "message_stop"})

    def anthropic_json(self) -> dict[str, Any]:
        r = self.reply
        content: list[dict[str, Any]] = []
        if r.thinking:
            content.append({"type": "thinking", "thinking": r.thinking, "signature": r.signature})
        if r.redacted_thinking:
            content.append({"type": "redacted_thinking", "data": r.redacted_thinking})
        if r.text:
            content.append({"type": "text", "text": r.text})
        for k, call in enumerate(r.tool_calls):
            try:
                parsed = json.loads(call.arguments())
            except ValueError:
                parsed = {}
            content.append({"type": "tool_use", "id": self.anthropic_tool_id(k, call),
                            "name": call.name, "input": parsed})
        u = self.usage
        return {"id": f"msg_fake{self.serial:06d}", "type": "message", "role": "assistant",
                "model": self.model, "content": content, "stop_reason": self.anthropic_stop(),
                "stop_sequence": None,
                "usage": {"input_tokens": u.input, "output_tokens": u.output,
                          "cache_creation_input_tokens": u.cache_write,
                          "cache_read_input_tokens": u.cache_read}}

    # OpenAI ---------------------------------------------------------------------

    def openai_finish(self) -> str:
        sr = self.reply.stop_reason
        if sr:
            return _OPENAI_FINISH.get(sr, sr)
        return "tool_calls" if self.reply.tool_calls else "stop"

    def openai_tool_id(self, k: int, call: ToolCall) -> str:
        return call.id or f"call_fake{self.serial:04d}{k:02d}"

    def openai_usage(self) -> dict[str, Any]:
        u = self.usage
        prompt = u.input + u.cache_read + u.cache_write
        return {"prompt_tokens": prompt, "completion_tokens": u.output,
                "total_tokens": prompt + u.output,
                "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0,
                                              "rejected_prediction_tokens": 0}}

    def openai_events(self) -> Iterator[bytes]:
        r = self.reply
        include_usage = bool((self.body.get("stream_options") or {}).get("include_usage"))
        base = {"id": f"chatcmpl-fake{self.serial:06d}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.model, "system_fingerprint": "fp_fake"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
            if include_usage:
                data["usage"] = None
            return _sse(None, data)

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        # vLLM / DeepSeek-style servers stream reasoning in ``reasoning_content``.
        for piece in _pieces(r.thinking, r.chunk_size):
            yield chunk({"reasoning_content": piece})
        for piece in _pieces(r.text, r.chunk_size):
            yield chunk({"content": piece})
        for k, call in enumerate(r.tool_calls):
            yield chunk({"tool_calls": [{"index": k, "id": self.openai_tool_id(k, call), "type": "function",
                                         "function": {"name": call.name, "arguments": ""}}]})
            for piece in _pieces(call.arguments(), max(r.chunk_size, 1)):
                yield chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
        if r.stream_error:
            kind, message = r.stream_error
            yield _sse(None, {"error": {"message": message, "type": kind, "param": None, "code": None}})
            return
        yield chunk({}, self.openai_finish())
        if include_usage:
            yield _sse(None, dict(base, choices=[], usage=self.openai_usage()))
        yield b"data: [DONE]\n\n"

    def openai_json(self) -> dict[str, Any]:
        r = self.reply
        message: dict[str, Any] = {"role": "assistant", "content": r.text or None, "refusal": None}
        if r.tool_calls:
            message["tool_calls"] = [
                {"id": self.openai_tool_id(k, c), "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments()}}
                for k, c in enumerate(r.tool_calls)]
        return {"id": f"chatcmpl-fake{self.serial:06d}", "object": "chat.completion",
                "created": int(time.time()), "model": self.model, "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": self.openai_finish()}],
                "usage": self.openai_usage()}


def _anthropic_error_body(status: int, kind: str | None, message: str | None, serial: int) -> dict[str, Any]:
    kind = kind or _ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error",
            "error": {"type": kind, "message": message or _ANTHROPIC_ERROR_MESSAGES.get(kind, kind)},
            "request_id": f"req_fake{serial:06d}"}


def _openai_error_body(status: int, kind: str | None, message: str | None, code: str | None,
                       param: str | None = None, model: str = "") -> dict[str, Any]:
    defaults: dict[int, tuple[str, str, str | None]] = {
        400: ("invalid_request_error", "Invalid request.", None),
        401: ("invalid_request_error", "Incorrect API key provided: sk-fake. You can find your API "
              "key at https://platform.openai.com/account/api-keys.", "invalid_api_key"),
        403: ("invalid_request_error", "You are not allowed to sample from this model", None),
        404: ("invalid_request_error", f"The model `{model}` does not exist or you do not have access to it.",
              "model_not_found"),
        429: ("requests", "Rate limit reached for requests. Please try again later.", "rate_limit_exceeded"),
        500: ("server_error", "The server had an error while processing your request. Sorry about that!", None),
        503: ("server_error", "The engine is currently overloaded, please try again later", None),
        529: ("server_error", "The server is overloaded, please try again later", None),
    }
    d_kind, d_message, d_code = defaults.get(status, ("server_error" if status >= 500 else "invalid_request_error",
                                                      f"Error {status}", None))
    return {"error": {"message": message or d_message, "type": kind or d_kind, "param": param,
                      "code": code if code is not None else d_code}}
