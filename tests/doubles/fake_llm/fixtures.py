"""Pytest fixtures for the fake LLM server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import FakeLLMServer


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A running fake LLM server, fresh for each test."""
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
