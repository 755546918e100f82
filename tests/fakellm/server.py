"""A fake LLM server that speaks the real Anthropic and OpenAI wire formats.

It binds 127.0.0.1 on a free port and serves from a background thread, so both the
test process (real SDK clients) and subprocesses such as ``loom run`` can reach it.

* ``POST /v1/messages`` - Anthropic Messages API: SSE stream (``message_start``,
  ``ping``, ``content_block_start/delta/stop`` with ``text_delta`` /
  ``thinking_delta`` + ``signature_delta`` / ``input_json_delta``, ``message_delta``,
  ``message_stop``, ``error``) or a JSON message when ``stream`` is false.
* ``POST /v1/chat/completions`` (and ``/chat/completions``) - OpenAI Chat
  Completions: ``chat.completion.chunk`` stream with ``tool_calls`` deltas by index,
  arguments split over chunks, a usage chunk when ``stream_options.include_usage``,
  then ``data: [DONE]``; or a ``chat.completion`` JSON object.

Requests are validated as strictly as the real services do (a tool_use without its
tool_result, a tool_result without its tool_use, empty text blocks, a first message
that is not from the user, assistant tool_calls without tool messages...) and rejected
with the real 400 error shapes. Tests script the answers with a queue of
:class:`Reply` values; every request is recorded for assertions.

Usage::

    server = FakeLLMServer().start()
    server.enqueue(Reply.text("hi"), Reply.tool("read_file", {"path": "a.py"}))
    AsyncAnthropic(api_key="k", base_url=server.anthropic_base_url)
    AsyncOpenAI(api_key="k", base_url=server.openai_base_url)
    server.requests[-1].body["messages"]
    server.wait_for_requests(2)        # from another thread / for a subprocess
    reply, gate = Reply.text("late").held(); ...; gate.set()
    server.client_disconnects          # answers the client hung up on
    server.stop()

Reply kinds: ``Reply.text``, ``Reply.tool`` / ``Reply.tools`` (parallel calls),
``Reply(thinking=..., signature=...)``, ``Reply.error(status, retry_after=...)``,
``Reply.prompt_too_long()``, ``Reply.broken(text, after=N)`` (connection cut after N
stream events), ``Reply(stream_error=(type, message))`` (an in-stream error event),
``Reply.raw(path_or_bytes)`` (a recorded body, byte for byte), ``Reply.silent()`` (accepts
the request and never answers), ``Reply.stall(text, after=N)`` (N stream events, then
silence), ``Reply.proxy_error(413, "Request Entity Too Large")`` (an HTML error page, as
nginx sends); ``chunk_size`` and ``chunk_delay`` shape the stream. A silent or stalled
answer hangs until the client hangs up (counted in ``client_disconnects``) or the
server stops.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# --- scripted replies ----------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    # Sent verbatim instead of json.dumps(input), e.g. to stream arguments that are
    # not valid JSON.
    raw_arguments: str | None = None

    def arguments(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(dict(self.input))


@dataclass(frozen=True)
class Reply:
    """One scripted answer; rendered in whichever wire format the request used."""

    text: str = ""
    thinking: str = ""
    signature: str = "sig-fake-thinking"
    redacted_thinking: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    # input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens
    usage: Mapping[str, int] | None = None
    # Neutral (end_turn, tool_use, max_tokens, refusal) or the API's own value.
    stop_reason: str | None = None
    model: str | None = None
    chunk_size: int = 8
    chunk_delay: float = 0.0
    # Cut the connection after this many stream events (mid-chunked body).
    break_after: int | None = None
    # Send this many stream events, then nothing more (a stalled upstream).
    stall_after: int | None = None
    # Accept the request and never send a byte (not even the status line).
    silent: bool = False
    # (n, seconds): go quiet for ``seconds`` before stream event n, sending only a
    # keep-alive (Anthropic's ping event, an SSE comment for OpenAI) every
    # ``keepalive_every`` seconds if that is set.
    pause: tuple[int, float] | None = None
    keepalive_every: float | None = None
    # An in-stream error after the content: (error type, message).
    stream_error: tuple[str, str] | None = None
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    error_code: str | None = None
    retry_after: str | None = None
    context_too_long: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None
    content_type: str = "text/event-stream"
    # The reply waits until this is set (or the server stops).
    gate: threading.Event | None = None

    # -- constructors --

    @classmethod
    def tool(cls, name: str, input: Mapping[str, Any] | None = None, *, id: str | None = None,
             text: str = "", **kw: Any) -> Reply:
        return cls(text=text, tool_calls=(ToolCall(name, input or {}, id),), **kw)

    @classmethod
    def tools(cls, *calls: ToolCall | tuple[str, Mapping[str, Any]], text: str = "", **kw: Any) -> Reply:
        """Several tool calls in one answer (parallel tool use)."""
        built = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], c[1]) for c in calls)
        return cls(text=text, tool_calls=built, **kw)

    @classmethod
    def error(cls, status: int, message: str | None = None, *, type: str | None = None,
              code: str | None = None, retry_after: float | str | None = None, **kw: Any) -> Reply:
        return cls(status=status, error_message=message, error_type=type, error_code=code,
                   retry_after=None if retry_after is None else str(retry_after), **kw)

    @classmethod
    def prompt_too_long(cls) -> Reply:
        return cls(status=400, context_too_long=True)

    @classmethod
    def broken(cls, text: str, *, after: int, **kw: Any) -> Reply:
        """Streams ``text`` but cuts the connection after ``after`` events."""
        return cls(text=text, break_after=after, **kw)

    @classmethod
    def raw(cls, body: bytes | str | Path, *, content_type: str = "text/event-stream",
            status: int = 200, chunk_size: int = 0, **kw: Any) -> Reply:
        """Serve ``body`` (bytes, or a file path) byte for byte."""
        if isinstance(body, Path):
            data = body.read_bytes()
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = body
        return cls(raw_body=data, content_type=content_type, status=status, chunk_size=chunk_size, **kw)

    @classmethod
    def silent_reply(cls) -> Reply:
        """Accepts the request and never answers."""
        return cls(silent=True)

    @classmethod
    def stall(cls, text: str, *, after: int, **kw: Any) -> Reply:
        """Streams ``text`` but goes quiet, connection open, after ``after`` events."""
        return cls(text=text, stall_after=after, **kw)

    @classmethod
    def proxy_error(cls, status: int, title: str) -> Reply:
        """An HTML error page with ``status``, as a reverse proxy (nginx) answers."""
        page = (f"<html>\r\n<head><title>{status} {title}</title></head>\r\n<body>\r\n"
                f"<center><h1>{status} {title}</h1></center>\r\n<hr><center>nginx</center>\r\n"
                "</body>\r\n</html>\r\n")
        return cls.raw(page, content_type="text/html", status=status)

    def held(self) -> tuple[Reply, threading.Event]:
        """This reply, held until the returned event is set."""
        gate = threading.Event()
        return replace(self, gate=gate), gate


def _text_reply(cls: type[Reply], text: str, **kw: Any) -> Reply:
    return cls(text=text, **kw)


# ``Reply.silent()`` likewise: the dataclass field ``silent`` keeps its name.
Reply.silent = Reply.silent_reply  # type: ignore[assignment,method-assign]
# ``Reply.text("hi")`` reads best in tests. Installed after the class is built so the
# dataclass field of the same name keeps its default; on instances the field value wins
# (a classmethod is a non-data descriptor), so ``reply.text`` is still the text.
Reply.text = classmethod(_text_reply)  # type: ignore[assignment,method-assign]


def without_cache_control(value: Any) -> Any:
    """A request body without its cache_control marks: they say where the cached prefix
    ends (on the newest message, so they move every turn), not what it holds."""
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


@dataclass(frozen=True)
class RecordedRequest:
    index: int
    method: str
    path: str
    api: str  # "anthropic" | "openai" | "unknown"
    headers: Mapping[str, str]  # lower-case names
    raw: bytes
    body: Any  # parsed JSON, or None
    rejected: str | None = None  # the validation error the server answered with

    @property
    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.body, dict):
            return list(self.body.get("messages") or [])
        return []


# --- strict validation, as the real APIs do -------------------------------------------

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _count_cache_control(body: Mapping[str, Any]) -> int:
    count = 0
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for b in system if isinstance(b, dict) and b.get("cache_control"))
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("cache_control"):
            count += 1
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and isinstance(msg.get("content"), list):
            count += sum(1 for b in msg["content"] if isinstance(b, dict) and b.get("cache_control"))
    return count


def validate_anthropic(body: Any) -> str | None:
    """The first reason the real Messages API would answer 400, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Field required"
    system = body.get("system")
    if system is not None:
        if isinstance(system, list):
            for j, block in enumerate(system):
                if not isinstance(block, dict) or block.get("type") != "text":
                    return f"system.{j}: Input tag does not match expected 'text'"
                if not str(block.get("text", "")).strip():
                    return f"system.{j}.text: text content blocks must contain non-whitespace text"
        elif not isinstance(system, str):
            return "system: Input should be a valid string or list"
    for j, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not _TOOL_NAME.match(str(tool.get("name", ""))):
            return f"tools.{j}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{j}.custom.input_schema: Field required with type 'object'"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        if body.get("temperature") not in (None, 1, 1.0):
            return "`temperature` may only be set to 1 when thinking is enabled"
    if _count_cache_control(body) > 4:
        return (f"A maximum of 4 blocks with cache_control may be provided. "
                f"Found {_count_cache_control(body)}.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    seen_ids: set[str] = set()
    prev_tool_uses: list[str] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        role = msg["role"]
        if i == 0 and role != "user":
            return "messages: first message must use the \"user\" role"
        content = msg.get("content")
        is_last = i == len(messages) - 1
        if content is None or content == "" or content == []:
            if not (is_last and role == "assistant"):
                return (f"messages.{i}: all messages must have non-empty content except for "
                        "the optional final assistant message")
        blocks = _blocks(content)
        tool_uses: list[str] = []
        result_ids: list[str] = []
        seen_non_result = False
        for j, block in enumerate(blocks):
            if not isinstance(block, dict):
                return f"messages.{i}.content.{j}: Input should be an object"
            kind = block.get("type")
            where = f"messages.{i}.content.{j}"
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str) or not text:
                    return f"{where}.text: text content blocks must be non-empty"
                if not text.strip():
                    return f"{where}.text: text content blocks must contain non-whitespace text"
                seen_non_result = True
            elif kind == "image":
                if role != "user":
                    return f"{where}: image blocks are only allowed in user messages"
                seen_non_result = True
            elif kind == "tool_use":
                if role != "assistant":
                    return f"{where}: tool_use blocks are only allowed in assistant messages"
                tid = block.get("id")
                if not isinstance(tid, str) or not tid:
                    return f"{where}.tool_use.id: Field required"
                if tid in seen_ids:
                    return f"{where}: `tool_use` ids must be unique"
                if not isinstance(block.get("input"), dict):
                    return f"{where}.tool_use.input: Input should be a valid dictionary"
                if not _TOOL_NAME.match(str(block.get("name", ""))):
                    return f"{where}.tool_use.name: String should match pattern"
                seen_ids.add(tid)
                tool_uses.append(tid)
            elif kind == "tool_result":
                if role != "user":
                    return f"{where}: tool_result blocks are only allowed in user messages"
                if seen_non_result:
                    return (f"messages.{i}: tool_result blocks must come before any other content "
                            "in a user message")
                tid = block.get("tool_use_id")
                if tid not in prev_tool_uses:
                    return (f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                            "Each `tool_result` block must have a corresponding `tool_use` block in "
                            "the previous message.")
                inner = block.get("content")
                if isinstance(inner, list):
                    for k, sub in enumerate(inner):
                        if (isinstance(sub, dict) and sub.get("type") == "text"
                                and not str(sub.get("text", "")).strip()):
                            return f"{where}.content.{k}.text: text content blocks must be non-empty"
                result_ids.append(tid)
            elif kind == "thinking":
                if role != "assistant":
                    return f"{where}: thinking blocks are only allowed in assistant messages"
                if not isinstance(block.get("signature"), str) or not block.get("signature"):
                    return f"{where}.thinking.signature: Field required"
                if not isinstance(block.get("thinking"), str):
                    return f"{where}.thinking.thinking: Field required"
            elif kind == "redacted_thinking":
                if not isinstance(block.get("data"), str) or not block.get("data"):
                    return f"{where}.redacted_thinking.data: Field required"
            else:
                return f"{where}: unknown content block type {kind!r}"
        if prev_tool_uses:
            missing = [t for t in prev_tool_uses if t not in result_ids]
            if missing:
                return (f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                        "corresponding `tool_result` block in the next message.")
        prev_tool_uses = tool_uses
    if prev_tool_uses:
        return (f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` "
                f"blocks immediately after: {', '.join(prev_tool_uses)}. Each `tool_use` block must "
                "have a corresponding `tool_result` block in the next message.")
    return None


def validate_openai(body: Any) -> tuple[str, str | None] | None:
    """(message, param) of the first reason Chat Completions would answer 400, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object", None
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter", "model"
    if body.get("stream_options") is not None and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
    for j, tool in enumerate(body.get("tools") or []):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(fn, dict):
            return f"Invalid value for 'tools[{j}]': expected a function tool.", f"tools[{j}]"
        if not re.match(r"^[a-zA-Z0-9_-]{1,64}$", str(fn.get("name", ""))):
            return (f"Invalid 'tools[{j}].function.name': string does not match pattern.",
                    f"tools[{j}].function.name")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages"
    pending: list[str] = []  # tool_call ids still waiting for their tool message
    answerable: set[str] = set()
    pending_from = -1
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return (f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                    "'tool', and 'developer'.", f"messages.[{i}].role")
        if pending and role != "tool":
            return ("An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                    f"response messages: {', '.join(pending)}", f"messages.[{pending_from}].role")
        content = msg.get("content")
        if role == "tool":
            tid = msg.get("tool_call_id")
            if tid not in answerable:
                return ("Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceding message with 'tool_calls'.", f"messages.[{i}].role")
            if not isinstance(content, (str, list)):
                return f"Invalid type for 'messages[{i}].content': expected a string.", f"messages.[{i}].content"
            if tid in pending:
                pending.remove(tid)
            continue
        answerable = set()
        if role == "assistant":
            calls = msg.get("tool_calls")
            if calls:
                for k, call in enumerate(calls):
                    fn = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(fn, dict) or not isinstance(call.get("id"), str):
                        return (f"Missing required parameter: 'messages[{i}].tool_calls[{k}].id'.",
                                f"messages.[{i}].tool_calls")
                    if not isinstance(fn.get("arguments"), str):
                        return (f"Invalid type for 'messages[{i}].tool_calls[{k}].function.arguments': "
                                "expected a string.", f"messages.[{i}].tool_calls")
                pending = [c["id"] for c in calls]
                answerable = set(pending)
                pending_from = i
            elif content is None or content == "":
                return (f"Invalid value for 'messages[{i}].content': expected a non-empty string "
                        "when there are no tool_calls.", f"messages.[{i}].content")
        elif content is None:
            return (f"Invalid type for 'messages[{i}].content': expected one of a string or array, "
                    "but got null.", f"messages.[{i}].content")
    if pending:
        return ("An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}", f"messages.[{pending_from}].role")
    return None


# --- rendering -----------------------------------------------------------------------

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


# --- the HTTP side -------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Idle keep-alive connections must not block stop().
    block_on_close = False
    fake: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up mid-stream are normal here (cancel tests); stay quiet.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakellm/1.0"
    timeout = 60
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Streams are many small writes; without this, Nagle + delayed ACK add ~40 ms each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, False)

    # -- plumbing --

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_chunked(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self) -> None:
        """Drop the connection mid-body, like a proxy or a crashed upstream would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _hang(self) -> None:
        """Send nothing until the client hangs up (counted) or the server stops."""
        fake = self.server.fake
        self.close_connection = True
        while not fake._stopping.wait(0.02):
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                try:
                    gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    fake._note_disconnect()
                    return
        self._cut()

    def _stream(self, events: Iterator[bytes], reply: Reply, headers: Mapping[str, str],
                keepalive: bytes = b": keep-alive\n\n") -> None:
        fake = self.server.fake
        self._start_chunked(200, "text/event-stream; charset=utf-8", headers)
        for n, event in enumerate(events):
            if reply.pause is not None and n == reply.pause[0]:
                self.wfile.flush()
                until = time.monotonic() + reply.pause[1]
                step = reply.keepalive_every or reply.pause[1]
                while (left := until - time.monotonic()) > 0:
                    if fake._stopping.wait(min(step, left)):
                        self._cut()
                        return
                    if reply.keepalive_every and time.monotonic() < until:
                        self._chunk(keepalive)
                        self.wfile.flush()
            if reply.break_after is not None and n >= reply.break_after:
                self._cut()
                return
            if reply.stall_after is not None and n >= reply.stall_after:
                self.wfile.flush()
                self._hang()
                return
            if n and reply.chunk_delay and fake._stopping.wait(reply.chunk_delay):
                self._cut()
                return
            self._chunk(event)
        self._end_chunked()

    # -- requests --

    def do_GET(self) -> None:  # noqa: N802
        self._send_json(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages":
            api = "anthropic"
        elif path in ("/v1/chat/completions", "/chat/completions"):
            api = "openai"
        else:
            api = "unknown"
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        rejected = self._reject_reason(api, body, raw, headers)
        serial = fake._record(RecordedRequest(
            index=0, method="POST", path=path, api=api, headers=headers, raw=raw, body=body,
            rejected=rejected[1] if rejected else None))
        try:
            if rejected:
                status, message, param = rejected
                self._error(api, status, None, message, None, serial, param=param, body=body)
                return
            reply = fake._next_reply()
            if reply is None:
                message = (f"fake LLM server: no reply queued for request #{serial} (POST {path}); "
                           "enqueue a Reply before calling the model")
                self._error(api, 500, None, message, None, serial, body=body)
                return
            if reply.silent:
                self._hang()
                return
            if reply.gate is not None:
                while not reply.gate.wait(0.05):
                    if fake._stopping.is_set():
                        self._cut()
                        return
            self._answer(api, reply, body, raw, serial)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # The client hung up mid-answer (an aborted stream).
            self.close_connection = True
            fake._note_disconnect()

    def _reject_reason(self, api: str, body: Any, raw: bytes,
                       headers: Mapping[str, str]) -> tuple[int, str, str | None] | None:
        if api == "unknown":
            return 404, f"Not Found: {self.path}", None
        if body is None:
            return 400, "There was an error parsing the body of your request as JSON.", None
        if api == "anthropic":
            if not headers.get("x-api-key") and not headers.get("authorization"):
                return 401, "x-api-key header is required", None
            if not headers.get("anthropic-version"):
                return 400, "anthropic-version: header is required", None
            msg = validate_anthropic(body)
            return (400, msg, None) if msg else None
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return 401, "You didn't provide an API key.", None
        found = validate_openai(body)
        return (400, found[0], found[1]) if found else None

    def _error(self, api: str, status: int, kind: str | None, message: str | None, code: str | None,
               serial: int, *, param: str | None = None, body: Any = None,
               retry_after: str | None = None, extra: Mapping[str, str] | None = None) -> None:
        headers = dict(extra or {})
        if retry_after is not None:
            headers["retry-after"] = retry_after
        model = str(body.get("model", "")) if isinstance(body, dict) else ""
        if api == "openai":
            headers.setdefault("x-request-id", f"req_fake{serial:06d}")
            self._send_json(status, _openai_error_body(status, kind, message, code, param, model), headers)
        else:
            headers.setdefault("request-id", f"req_fake{serial:06d}")
            if status == 404 and message is None and kind is None:
                message = f"model: {model}"
            self._send_json(status, _anthropic_error_body(status, kind, message, serial), headers)

    def _answer(self, api: str, reply: Reply, body: Any, raw: bytes, serial: int) -> None:
        headers = dict(reply.headers)
        if reply.raw_body is not None and reply.status != 200:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.raw_body)))
            self.end_headers()
            self.wfile.write(reply.raw_body)
            return
        if reply.status != 200 or reply.error_type or reply.context_too_long:
            kind, message, code = reply.error_type, reply.error_message, reply.error_code
            if reply.context_too_long:
                if api == "openai":
                    message = message or ("This model's maximum context length is 128000 tokens. However, "
                                          "your messages resulted in 210000 tokens. Please reduce the length "
                                          "of the messages.")
                    code = code or "context_length_exceeded"
                else:
                    message = message or "prompt is too long: 210000 tokens > 200000 maximum"
            self._error(api, reply.status if reply.status != 200 else 400, kind, message, code, serial,
                        body=body, retry_after=reply.retry_after, extra=headers)
            return
        if reply.raw_body is not None:
            if reply.content_type.startswith("text/event-stream"):
                self._stream(iter(_pieces_bytes(reply.raw_body, reply.chunk_size)), reply, headers)
            else:
                self.send_response(200)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.raw_body)))
                self.end_headers()
                self.wfile.write(reply.raw_body)
            return
        renderer = _Renderer(reply, body, raw, serial)
        streaming = bool(body.get("stream"))
        if api == "anthropic":
            headers.setdefault("request-id", f"req_fake{serial:06d}")
            if streaming:
                self._stream(renderer.anthropic_events(), reply, headers,
                             keepalive=_sse("ping", {"type": "ping"}))
            else:
                self._send_json(200, renderer.anthropic_json(), headers)
        else:
            headers.setdefault("x-request-id", f"req_fake{serial:06d}")
            if streaming:
                self._stream(renderer.openai_events(), reply, headers)
            else:
                self._send_json(200, renderer.openai_json(), headers)


def _pieces_bytes(data: bytes, size: int) -> list[bytes]:
    if size <= 0:
        return [data]
    return [data[i:i + size] for i in range(0, len(data), size)]


class FakeLLMServer:
    """The fake server; ``start()`` it, script it with ``enqueue``, ``stop()`` it."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._lock = threading.Condition()
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._disconnects = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self._host, 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fakellm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake LLM server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def env(self, provider: str = "anthropic") -> dict[str, str]:
        """Environment variables pointing a ``loom`` subprocess at this server."""
        if provider == "openai":
            return {"OPENAI_BASE_URL": self.openai_base_url, "OPENAI_API_KEY": "sk-fake-test-key",
                    "LOOM_PROVIDER": "openai"}
        return {"ANTHROPIC_BASE_URL": self.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-fake-test-key",
                "LOOM_PROVIDER": "anthropic"}

    # -- scripting --

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self._requests.clear()
            self._disconnects = 0

    # -- recording --

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise AssertionError("the fake LLM server has received no request")
            return self._requests[-1]

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests have arrived (for subprocess tests)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    @property
    def client_disconnects(self) -> int:
        """How many answers were cut short because the client closed the connection."""
        with self._lock:
            return self._disconnects

    def wait_for_disconnects(self, count: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._disconnects < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    # -- used by the handler --

    def _note_disconnect(self) -> None:
        with self._lock:
            self._disconnects += 1
            self._lock.notify_all()

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            serial = len(self._requests) + 1
            self._requests.append(replace(request, index=serial))
            self._lock.notify_all()
            return serial

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def free_port() -> int:
    """A port with nothing listening on it (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "ToolCall", "free_port",
                          "validate_anthropic", "validate_openai"]
