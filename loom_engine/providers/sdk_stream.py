"""What both SDK adapters share: the per-loop client, the stream relay (map errors,
close), tool-input parsing, and the wording of errors."""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from ..messages import ToolResultPart, ToolUsePart, scrub_message, scrub_text
from .base import (
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    StreamCompleted,
    StreamText,
    StreamThinking,
    StreamTimeouts,
)
from .stall_watch import StallClock, wind_with_body
from .usage_limit import UsageLimit

# Connecting is quick or not happening: the SDKs' own default.
CONNECT_TIMEOUT_S = 5.0
# Added to the stall timeouts for the SDK's socket read timeout, which only backs them
# up (a stall is reported by the relay, with its own wording, first).
_READ_TIMEOUT_MARGIN_S = 5.0


class LoopClient:
    """An SDK client, made on first use in each event loop: httpx connection pools
    belong to the loop that opened them."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def prepare(self) -> None:
        """Build the client now, outside any loop (in a worker thread): importing the SDK
        and making its SSL context take long enough to freeze a UI. The first loop to
        ask for a client adopts this one (an httpx client binds to a loop on first use)."""
        if self._client is None:
            self._client = self._make()

    def get(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is None:
            self._loop = loop  # made by prepare(), not used yet
        elif self._client is None or self._loop is not loop:
            self._client = self._make()
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def client_options(api_key: str, base_url: str, timeout: float | None,
                   stalls: StreamTimeouts | None = None) -> dict[str, Any]:
    """Keyword arguments for either SDK's async client. The SDK never retries on its
    own: :mod:`loom_engine.providers.retry` does, with the partial-output rules.

    ``timeout`` (seconds) replaces the SDK's timeouts outright; without it the socket
    read timeout follows ``stalls`` instead of the SDKs' 600 s default."""
    import httpx2

    options: dict[str, Any] = {"api_key": api_key, "base_url": base_url, "max_retries": 0}
    if timeout is not None:
        options["timeout"] = timeout
    else:
        limits = stalls or StreamTimeouts()
        read = max(limits.first_event_s, limits.idle_s) + _READ_TIMEOUT_MARGIN_S
        options["timeout"] = httpx2.Timeout(read, connect=CONNECT_TIMEOUT_S)
    return options


class Accumulator(Protocol):
    has_output: bool

    def feed(self, raw: Any) -> Iterable[ProviderEvent]: ...

    def completed(self) -> StreamCompleted: ...


_END = object()


async def relay(open_stream: Callable[[], Awaitable[Any]], acc: Accumulator, *, finished: Callable[[], bool],
                map_error: Callable[[Exception, bool], ProviderError | None],
                incomplete: str, stalls: StreamTimeouts | None = None,
                where: str = "the server") -> AsyncGenerator[ProviderEvent, None]:
    """Yield ``acc``'s events for every raw SDK event, then the completed message.

    SDK and transport failures become ProviderErrors (``map_error`` gets whether output
    had already streamed); the SDK stream is always closed, which closes the HTTP
    response when the caller stops early or is cancelled.

    A stream silent past ``stalls`` (see :mod:`.stall_watch`) raises
    :class:`StreamStalled`, which the retry loop treats as a dropped stream.
    """
    clock = StallClock(stalls or StreamTimeouts())
    sdk_stream: Any = None
    try:
        try:
            async with clock.watch():
                sdk_stream = await open_stream()
            wind_with_body(sdk_stream, clock)
            events = aiter(sdk_stream)
            while True:
                async with clock.watch():
                    raw_event = await anext(events, _END)
                if raw_event is _END:
                    break
                clock.touch()
                for event in acc.feed(raw_event):
                    yield _scrubbed(event)
        except TimeoutError:
            raise clock.stalled(where, acc.has_output) from None
    except ProviderError:
        raise
    except Exception as exc:  # SDK, transport and decoding failures
        mapped = map_error(exc, acc.has_output)
        if mapped is None:
            raise
        raise mapped from exc
    finally:
        if sdk_stream is not None:
            await sdk_stream.close()
    if not finished():
        raise ProviderError("stream_broken", incomplete, partial_output=acc.has_output)
    completed = acc.completed()
    yield replace(completed, message=scrub_message(completed.message))


def _scrubbed(event: ProviderEvent) -> ProviderEvent:
    """Deltas without lone surrogates: the UI prints them and cannot encode one."""
    if isinstance(event, (StreamText, StreamThinking)) and not event.text.isascii():
        clean = scrub_text(event.text)
        if clean != event.text:
            return type(event)(clean)
    return event


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """A field of an SDK object or of the plain dict a compatible server sent instead.

    Servers that speak "OpenAI-compatible" add fields the SDK models do not declare (they
    land in ``model_extra``) and send ``null`` where a value is missing: both read as
    ``default``.
    """
    if obj is None:
        return default
    if isinstance(obj, dict):
        value = obj.get(name)
    else:
        value = getattr(obj, name, None)
        if value is None:
            extra = getattr(obj, "model_extra", None)
            if isinstance(extra, dict):
                value = extra.get(name)
    return default if value is None else value


def parse_tool_input(raw: str, start_input: Any = None) -> tuple[dict[str, Any], str | None]:
    """(input, raw_input): raw_input is kept only when the JSON did not parse to an object."""
    if not raw.strip():
        return (dict(start_input) if isinstance(start_input, dict) else {}), None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    if not isinstance(value, dict):
        return {}, raw
    return value, None


# How much of a malformed call's arguments goes back to the model, which has the whole
# of them in the tool result's error already.
_INVALID_ARGUMENTS_KEPT = 2000


def tool_output_text(part: ToolResultPart) -> str:
    """A tool result as OpenAI's wires (Chat Completions and Responses) carry it: they
    have no error flag, so a failed call says so in its text."""
    if part.is_error and not part.content.lower().startswith("error"):
        return f"Error: {part.content}"
    return part.content


def sendable_tool_input(call: ToolUsePart) -> dict[str, Any]:
    """``call``'s arguments as the JSON object a request carries back to the model.

    Arguments that did not parse (a call cut off by the length limit) are never sent as
    the broken text: a server may refuse every later request of the session for it
    (llama-server answers 500 "Failed to parse tool call arguments as JSON", every time).
    An object recording what arrived goes instead - also for sessions saved before this,
    which keep the broken text in ``raw_input``, so ``--continue`` works on them.
    """
    if call.raw_input is None:
        return dict(call.input)
    received = call.raw_input
    if len(received) > _INVALID_ARGUMENTS_KEPT:
        received = received[:_INVALID_ARGUMENTS_KEPT] + "…"
    return {"_invalid_arguments": received}


# --- errors -------------------------------------------------------------------------

def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_TAG = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def readable_detail(text: str) -> str:
    """An error body fit for one line: an HTML error page (a proxy's) gives its title."""
    if "<" in text and ">" in text and re.search(r"<(html|head|body|title|h1)\b", text, re.IGNORECASE):
        title = _TITLE.search(text)
        text = title.group(1) if title else _TAG.sub(" ", text)
        text = html.unescape(text)
    return one_line(text)


def describe_cause(exc: BaseException) -> str:
    """The most telling line of a transport failure (e.g. "Connection refused")."""
    current: BaseException | None = exc
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            # asyncio words refusals as "Connect call failed (...)"; the errno says it plainly.
            if isinstance(current.errno, int) and current.errno > 0:
                return os.strerror(current.errno)
            return current.strerror
        current = current.__cause__ or current.__context__
    return one_line(str(exc)) or type(exc).__name__


# What a server says when it could not read the request itself (llama-server: 500
# "Failed to parse tool call arguments as JSON", "Failed to parse messages: ..."):
# the same request fails the same way, so it is not retried, whatever the status.
_UNREADABLE_REQUEST = re.compile(
    r"\b(?:failed to|unable to|could not|cannot|can't) parse (?:the )?"
    r"(?:tool[ _]call arguments|arguments|messages?|request|body|json)\b"
    r"|\berror parsing the (?:body|request)\b", re.IGNORECASE)


def unreadable_request(detail: str) -> bool:
    """True when an error's text says the request itself could not be parsed."""
    return _UNREADABLE_REQUEST.search(detail) is not None


def status_place(status: int | None, code: str) -> str:
    """The "500" / "400 invalid_value" an error message names: a code that only repeats
    the status (llama-server's ``"code": 500``) is said once."""
    if code == str(status):
        code = ""
    return (str(status) if status else "in-stream error") + (f" {code}" if code else "")


def status_error(kind: ProviderErrorKind, *, service: str, where: str, detail: str, model: str, base_url: str,
                 key_hint: str, status: int | None, retry_after: float | None,
                 partial: bool, context_window: int | None = None,
                 usage_limit: UsageLimit | None = None) -> ProviderError:
    """The ProviderError for an HTTP error status (or an error event in the stream),
    ``kind`` being its classification and ``service`` who answered ("Anthropic").
    A ``usage_limit`` the answer reported makes it that kind, whatever ``kind`` said."""
    if usage_limit is not None:
        spent = f" (the {usage_limit.window} limit)" if usage_limit.window else ""
        return ProviderError("usage_limit", f"{service} usage limit reached{spent} ({where}: {detail})",
                             status=status, retry_after=retry_after, partial_output=partial,
                             resets_at=usage_limit.resets_at)
    messages = {
        "auth": f"{service} rejected the API key ({where}: {detail}); {key_hint}",
        "permission": f"{service} refused the request ({where}: {detail})",
        "not_found": f"model '{model}' not found at {base_url} ({where}: {detail})",
        "context_length": f"the conversation is too long for model '{model}' ({detail})",
        "request_too_large": (f"request too large ({status or 413} from the server or a proxy: {detail}); "
                              "try /compact, or send fewer or smaller files and images"),
        "bad_request": f"{service} rejected the request ({where}: {detail})",
        "rate_limit": f"rate limited by {service} ({where}: {detail})",
        "overloaded": f"{service} is overloaded ({where}: {detail})",
        "timeout": f"{service} timed out ({where}: {detail})",
        "server": f"{service} server error ({where}: {detail})",
    }
    text = messages[kind]
    if kind == "context_length" and context_window:
        text += f"; the server's window is {context_window} tokens"
    if retry_after is not None:
        text += f"; retry after {retry_after:g}s"
    return ProviderError(kind, text, status=status, retry_after=retry_after, partial_output=partial,
                         context_window=context_window if kind == "context_length" else None)


def transport_error(exc: Exception, *, at: str, partial: bool, timeout: bool, connection: bool,
                    unreadable: bool) -> ProviderError | None:
    """The ProviderError for a failure below HTTP statuses, or None when ``exc`` is none
    of these. ``at`` names the endpoint ("Anthropic at https://…"); the flags say what
    the SDK classed ``exc`` as (its exception types differ per SDK)."""
    import httpx2

    if timeout or isinstance(exc, httpx2.TimeoutException):
        return ProviderError("timeout", f"the request to {at} timed out", partial_output=partial)
    if connection:
        cause = describe_cause(exc.__cause__ or exc)
        if partial:
            return ProviderError("stream_broken", f"the connection to {at} broke mid-answer ({cause})",
                                 partial_output=True)
        return ProviderError("connection", f"cannot connect to {at} ({cause})")
    if isinstance(exc, httpx2.TransportError):
        # Raised by the body iterator: the response had started, then the connection broke.
        return ProviderError("stream_broken", f"the connection to {at} broke mid-answer ({one_line(str(exc))})",
                             partial_output=partial)
    if unreadable or isinstance(exc, (httpx2.HTTPError, ValueError)):
        return ProviderError("stream_broken", f"unreadable response from {at} ({one_line(str(exc))})",
                             partial_output=partial)
    return None
