"""What a scripted answer is: :class:`Reply`, :class:`ToolCall`; and :class:`RecordedRequest`."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


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
    # Keep-alives as SSE comment lines (``: keep-alive``) whatever the API: what
    # llama-server sends on both its endpoints while it reads a long prompt.
    keepalive_comment: bool = False
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
    def slow_prompt(cls, text: str, *, answer_after: float, keepalive_every: float, **kw: Any) -> Reply:
        """``text``, after ``answer_after`` seconds of only ``: keep-alive`` comments
        every ``keepalive_every`` seconds: a local server reading a long prompt."""
        return cls(text=text, pause=(0, answer_after), keepalive_every=keepalive_every,
                   keepalive_comment=True, **kw)

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

    @classmethod
    def usage_limit(cls, *, reset_in: float | None, window: str = "5h", **kw: Any) -> Reply:
        """429 for a spent subscription allowance, with Anthropic's unified limit headers:
        the ``window`` ("5h", "7d") rejected, lifting ``reset_in`` seconds from now (None:
        no reset header). The real API gives whole seconds; fractions keep tests short."""
        headers = {"anthropic-ratelimit-unified-status": "rejected",
                   f"anthropic-ratelimit-unified-{window}-status": "rejected",
                   f"anthropic-ratelimit-unified-{window}-utilization": "1.0",
                   "anthropic-ratelimit-unified-representative-claim": window}
        if reset_in is not None:
            at = f"{time.time() + reset_in:.3f}"
            headers |= {"anthropic-ratelimit-unified-reset": at, f"anthropic-ratelimit-unified-{window}-reset": at}
        return cls.error(429, "This request would exceed your account's rate limit. Please try again later.",
                         type="rate_limit_error", headers=headers,
                         retry_after=None if reset_in is None else max(0, math.ceil(reset_in)), **kw)

    @classmethod
    def quota_exhausted(cls) -> Reply:
        """OpenAI's 429 for an account whose credit is used up (no reset is given)."""
        return cls.error(429, "You exceeded your current quota, please check your plan and billing details.",
                         type="insufficient_quota", code="insufficient_quota")

    def held(self) -> tuple[Reply, threading.Event]:
        """This reply, held until the returned event is set."""
        gate = threading.Event()
        return replace(self, gate=gate), gate


def _text_reply(cls: type[Reply], text: str, **kw: Any) -> Reply:
    return cls(text=text, **kw)


# ``Reply.silent()`` likewise: the dataclass field ``silent`` keeps its name.
Reply.silent = Reply.silent_reply  # type: ignore[assignment]
# ``Reply.text("hi")`` reads best in tests. Installed after the class is built so the
# dataclass field of the same name keeps its default; on instances the field value wins
# (a classmethod is a non-data descriptor), so ``reply.text`` is still the text.
Reply.text = classmethod(_text_reply)  # type: ignore[assignment]


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
    api: str  # "anthropic" | "openai" | "responses" | "unknown"
    headers: Mapping[str, str]  # lower-case names
    raw: bytes
    body: Any  # parsed JSON, or None
    rejected: str | None = None  # the validation error the server answered with

    @property
    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.body, dict):
            return list(self.body.get("messages") or [])
        return []
