"""The provider protocol: stream one request, yield normalised events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args, runtime_checkable

from ..messages import Message
from ..tool_spec import ToolSpec
from ..usage import Usage


@dataclass(frozen=True)
class ProviderRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 8192
    temperature: float | None = None
    # Extended thinking budget (Anthropic); None disables it.
    thinking_budget: int | None = None
    # Stable for a session (its id): a provider that routes by it (OpenAI's
    # ``prompt_cache_key``) keeps the session's requests on one warm prompt cache.
    cache_key: str | None = None


@dataclass(frozen=True)
class StreamTimeouts:
    """How long a stream may stay silent before it counts as stalled and is retried.

    ``first_event_s`` is how long the server may take to start its answer (its first
    data event), from sending the request or from the last keep-alive it sent meanwhile:
    a local model reading a long prompt says it is still working, and is waited for.
    ``idle_s`` is the longest silence once the answer has started. A server that accepts
    a request and never answers, or goes quiet mid-answer, would otherwise hold the run
    for the SDK's 10-minute read timeout per attempt.
    """

    first_event_s: float = 60.0
    # Well above every keep-alive period servers use (llama-server: a comment every ~30 s,
    # always a little after 30 s): an idle limit at or near the period expires just before
    # each keep-alive and drops a stream that is alive.
    idle_s: float = 90.0

    def __post_init__(self) -> None:
        if not (self.first_event_s > 0 and self.idle_s > 0):
            raise ValueError("stream timeouts must be positive numbers of seconds")


# --- normalised stream events -------------------------------------------------------


@dataclass(frozen=True)
class StreamText:
    text: str


@dataclass(frozen=True)
class StreamThinking:
    text: str


@dataclass(frozen=True)
class StreamToolUseStart:
    id: str
    name: str


@dataclass(frozen=True)
class StreamCompleted:
    """The last event of every successful stream."""

    message: Message  # the assistant message, tool calls' arguments parsed
    stop_reason: str  # end_turn | tool_use | max_tokens | stop_sequence | refusal | ...
    usage: Usage = field(default_factory=Usage)


ProviderEvent = StreamText | StreamThinking | StreamToolUseStart | StreamCompleted


# --- errors ---------------------------------------------------------------------------


# How a failed request is classified: the one list (a script's error turns are checked
# against it, the providers' classifiers return it, the chat words each kind).
ProviderErrorKind = Literal["auth", "permission", "not_found", "bad_request", "context_length",
                            "request_too_large", "rate_limit", "overloaded", "server", "connection",
                            "timeout", "stream_broken", "config", "usage_limit"]
ERROR_KINDS: frozenset[ProviderErrorKind] = frozenset(get_args(ProviderErrorKind))


def error_kind(value: object) -> ProviderErrorKind | None:
    """``value`` as an error kind, or None when it names none."""
    return next((kind for kind in ERROR_KINDS if kind == value), None)


class ProviderError(Exception):
    """A failed request, classified (``kind``) so the engine knows whether to retry.

    A ``usage_limit`` (a subscription's 5-hour or weekly allowance spent, a quota used
    up) is not retried: it lasts until ``resets_at`` (unix seconds, when the server
    said), and the engine waits for it or stops, as the run's policy says.
    """

    RETRYABLE: frozenset[ProviderErrorKind] = frozenset(
        {"rate_limit", "overloaded", "server", "connection", "timeout", "stream_broken"})

    def __init__(self, kind: ProviderErrorKind, message: str, *, status: int | None = None,
                 retry_after: float | None = None, partial_output: bool = False,
                 context_window: int | None = None, resets_at: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        # True when text or tool calls had already streamed before the failure.
        self.partial_output = partial_output
        # The window a context-overflow error names (llama.cpp's ``n_ctx``), when it does.
        self.context_window = context_window
        # When a usage limit lifts (unix seconds), when the server said.
        self.resets_at = resets_at

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE

    def __str__(self) -> str:
        return self.message


class StreamStalled(ProviderError):
    """No stream event arrived within the first-event or idle timeout; retried like a
    dropped stream."""

    def __init__(self, message: str, *, partial_output: bool) -> None:
        super().__init__("timeout", message, partial_output=partial_output)


@runtime_checkable
class Provider(Protocol):
    name: str

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Yield text/thinking deltas and tool starts, then exactly one StreamCompleted.

        Raise :class:`ProviderError` on failure (with ``partial_output`` set when
        something had already been yielded). Closing the iterator (``aclose``) must
        close the underlying HTTP stream.
        """
        ...


@runtime_checkable
class PreparableProvider(Provider, Protocol):
    """A provider whose SDK client can be built ahead of the first request."""

    def prepare(self) -> None:
        """Import the SDK and build the client now (off the UI's event loop)."""
        ...
