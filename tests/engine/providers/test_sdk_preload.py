"""Importing the SDK and building the client ahead of the first request, off the loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from loom_engine.messages import Message
from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.openai_provider import OpenAIProvider
from loom_engine.providers.sdk_preload import import_sdk, likely_provider, start_sdk_import
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.engine.providers.helpers import collect, make_request


@pytest.mark.parametrize(("args", "env", "expected"), [
    (["run", "x", "--provider", "openai"], {"LOOM_PROVIDER": "anthropic"}, "openai"),
    (["run", "x", "--provider=scripted"], {}, "scripted"),
    (["run", "x"], {"LOOM_PROVIDER": "openai"}, "openai"),
    (["run", "x"], {"OPENAI_BASE_URL": "http://localhost:11434/v1"}, "openai"),
    (["run", "x"], {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "anthropic"),
    (["run", "x"], {}, "anthropic"),
])
def test_likely_provider(args: list[str], env: dict[str, str], expected: str) -> None:
    assert likely_provider(args, env) == expected


def test_no_thread_for_a_provider_without_sdk() -> None:
    assert start_sdk_import("scripted") is None
    import_sdk("scripted")  # nothing to import, no error


def prepared_in_a_thread(provider: AnthropicProvider | OpenAIProvider) -> None:
    failures: list[BaseException] = []

    def prepare() -> None:
        try:
            provider.prepare()
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(error)

    thread = threading.Thread(target=prepare)
    thread.start()
    thread.join(60)
    assert not failures, failures


def test_a_client_prepared_in_a_thread_streams_on_any_loop(fake_llm: FakeLLMServer) -> None:
    provider = AnthropicProvider(api_key="k", base_url=fake_llm.anthropic_base_url)
    prepared_in_a_thread(provider)
    fake_llm.enqueue(Reply.text("first loop"), Reply.text("second loop"))
    request = make_request("claude-sonnet-4-6", Message.user("hi"))

    async def once() -> str:
        try:
            _events, done = await collect(provider, request)
        finally:
            await provider.aclose()
        return done.message.text

    assert asyncio.run(once()) == "first loop"
    assert asyncio.run(once()) == "second loop"  # a new loop gets a client of its own


def test_openai_client_prepared_in_a_thread(fake_llm: FakeLLMServer) -> None:
    provider = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url)
    prepared_in_a_thread(provider)
    fake_llm.enqueue(Reply.text("hello"))

    async def once() -> str:
        try:
            _events, done = await collect(provider, make_request("gpt-4.1", Message.user("hi")))
        finally:
            await provider.aclose()
        return done.message.text

    assert asyncio.run(once()) == "hello"
