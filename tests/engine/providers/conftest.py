"""Real providers aimed at the fake LLM server, for the provider tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.base import Provider, StreamTimeouts
from loom_engine.providers.openai_provider import OpenAIProvider
from tests.doubles.fake_llm.server import FakeLLMServer


@pytest.fixture
async def make(fake_llm: FakeLLMServer) -> AsyncIterator[Callable[..., Provider]]:
    """Builds a real provider of ``kind`` (anthropic | openai) for the fake server, with the
    given stall clocks (None: the defaults); closes their clients afterwards."""
    made: list[AnthropicProvider | OpenAIProvider] = []

    def build(kind: str, stalls: StreamTimeouts | None = None) -> Provider:
        extra = {} if stalls is None else {"stream_timeouts": stalls}
        provider: AnthropicProvider | OpenAIProvider
        if kind == "anthropic":
            provider = AnthropicProvider(api_key="k", base_url=fake_llm.anthropic_base_url, **extra)
        else:
            provider = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url, **extra)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()
