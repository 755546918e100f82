"""What the provider tests share: a request with two tools, and draining a stream."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from loom_engine.messages import Message
from loom_engine.providers.base import Provider, ProviderError, ProviderEvent, ProviderRequest, StreamCompleted
from loom_engine.tool_spec import ToolSpec

READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
BASH = ToolSpec("bash", "Run a command", {"type": "object", "properties": {"command": {"type": "string"}}})


def make_request(default_model: str, *messages: Message, tools: Sequence[ToolSpec] = (READ, BASH),
                 **kw: object) -> ProviderRequest:
    return ProviderRequest(model=str(kw.pop("model", default_model)), system=str(kw.pop("system", "You are Loom.")),
                           messages=tuple(messages), tools=tuple(tools), **kw)  # type: ignore[arg-type]


async def collect(provider: Provider, req: ProviderRequest) -> tuple[list[ProviderEvent], StreamCompleted]:
    """Every event of a successful stream, and its one closing StreamCompleted."""
    events = [e async for e in provider.stream(req)]
    assert isinstance(events[-1], StreamCompleted)
    assert sum(isinstance(e, StreamCompleted) for e in events) == 1
    return events, events[-1]


async def failure(provider: Provider, req: ProviderRequest) -> tuple[list[ProviderEvent], ProviderError]:
    """The events a failing stream yielded before its ProviderError, and the error."""
    events: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as info:
        async for event in provider.stream(req):
            events.append(event)
    return events, info.value
