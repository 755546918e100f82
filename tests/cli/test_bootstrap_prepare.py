"""bootstrap builds each SDK provider's client ahead of the first request, typed, not probed."""

from __future__ import annotations

from loom_cli.bootstrap import _prepare
from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.base import PreparableProvider
from loom_engine.providers.openai_provider import OpenAIProvider
from loom_engine.providers.scripted import ScriptedProvider


def test_the_sdk_providers_are_preparable_and_the_scripted_one_is_not() -> None:
    assert isinstance(AnthropicProvider(api_key="k"), PreparableProvider)
    assert isinstance(OpenAIProvider(api_key="k"), PreparableProvider)
    assert not isinstance(ScriptedProvider([]), PreparableProvider)


def test_prepare_builds_the_client_now() -> None:
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")
    _prepare(provider)
    assert provider._clients._client is not None  # the SDK client exists before any request


def test_a_provider_that_cannot_be_prepared_is_left_to_its_first_request() -> None:
    provider = AnthropicProvider(api_key="", base_url="https://api.anthropic.com")  # no key: building fails
    _prepare(provider)  # says nothing here; the first request reports the missing key
    assert provider._clients._client is None
