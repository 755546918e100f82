"""The provider protocol: stream one request, yield normalised events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..messages import Message
from ..tools.base import ToolSpec
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


class ProviderError(Exception):
    """A failed request, classified so the engine knows whether to retry.

    ``kind`` is one of: auth, permission, not_found, bad_request, context_length,
    rate_limit, overloaded, server, connection, timeout, stream_broken, config.
    """

    RETRYABLE = frozenset({"rate_limit", "overloaded", "server", "connection", "timeout", "stream_broken"})

    def __init__(self, kind: str, message: str, *, status: int | None = None,
                 retry_after: float | None = None, partial_output: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        # True when text or tool calls had already streamed before the failure.
        self.partial_output = partial_output

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE

    def __str__(self) -> str:
        return self.message


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
