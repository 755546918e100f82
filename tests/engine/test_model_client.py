"""The model client's request: how much output it asks for."""

from __future__ import annotations

from loom_engine.config import AgentConfig
from loom_engine.messages import Message
from loom_engine.model_client import ModelClient
from loom_engine.providers.scripted import ScriptedProvider


def _client(*, window: int, max_tokens: int = 8192) -> ModelClient:
    config = AgentConfig(model="local-model", context_window=window, max_tokens=max_tokens)
    return ModelClient(ScriptedProvider([]), config, system="You help.", tools=())


def test_a_big_window_asks_for_the_whole_setting() -> None:
    client = _client(window=200_000)
    request = client.build_request([Message.user("hello")])
    assert request.max_tokens == 8192


def test_a_small_window_asks_only_for_the_room_the_prompt_leaves() -> None:
    """An 8k local window with an 8k setting: prompt plus max_tokens would exceed the
    window, which vLLM refuses outright; the request asks for what is left."""
    client = _client(window=8192)
    messages = [Message.user("word " * 3000)]
    request = client.build_request(messages)
    prompt = client.context_usage(messages)[0]
    assert 1024 <= request.max_tokens < 8192
    assert prompt + request.max_tokens <= 8192


def test_a_window_already_full_still_asks_for_the_floor() -> None:
    client = _client(window=8192)
    request = client.build_request([Message.user("word " * 9000)])
    assert request.max_tokens == 1024


def test_a_setting_below_the_floor_is_kept() -> None:
    client = _client(window=8192, max_tokens=300)
    assert client.build_request([Message.user("word " * 9000)]).max_tokens == 300
