"""The ``[openai]`` settings reach the provider: ``wire_api`` picks the Responses API for
a custom base URL, ``reasoning_effort`` is sent, and the session id is the prompt cache key."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_cli.bootstrap import RunOptions, build_agent
from loom_engine.providers.openai_provider import OpenAIProvider
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import isolate_loom


async def test_the_settings_reach_the_requests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, workspace: Path,
                                               fake_llm: FakeLLMServer) -> None:
    isolate_loom(monkeypatch, tmp_path)
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('context_window = 200000\n[openai]\nwire_api = "responses"\nreasoning_effort = "low"\n')
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    built = build_agent(RunOptions(cwd=workspace, provider="openai", model="gpt-5-mini"), interactive=False)
    provider = built.agent.client.provider
    assert isinstance(provider, OpenAIProvider) and provider.wire == "responses"
    fake_llm.enqueue(Reply.text("hello"))
    async for _ in built.agent.run("hi"):
        pass
    sent = fake_llm.last_request
    assert sent.path == "/v1/responses" and sent.rejected is None, sent.rejected
    assert sent.body["reasoning"] == {"summary": "auto", "effort": "low"}
    assert sent.body["prompt_cache_key"] == built.agent.session_id
    built.session.close()
    await provider.aclose()


def test_without_the_setting_a_custom_url_stays_on_chat(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        workspace: Path, fake_llm: FakeLLMServer) -> None:
    isolate_loom(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    built = build_agent(RunOptions(cwd=workspace, provider="openai", model="gpt-5-mini"), interactive=False)
    provider = built.agent.client.provider
    assert isinstance(provider, OpenAIProvider) and provider.wire == "chat"
    built.session.close()
