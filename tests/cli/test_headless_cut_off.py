"""`loom run` when the model's output limit cut the answer off: the partial answer is
printed, stderr says it was cut off, the stop reason is in the json and the last
stream-json line (Loom's events: the finished event), and the run exits with its own code; both wire formats."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loom_cli.headless import EXIT_CUT_OFF, EXIT_OK, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

PROVIDERS = ("anthropic", "openai")


def fake_llm_again(server: FakeLLMServer) -> FakeLLMServer:
    server.enqueue(Reply(text=CUT, stop_reason="max_tokens"))
    return server
CUT = "The first half of a long answer, and then"


def _agent(tmp_path: Path, server: FakeLLMServer, provider_name: str, max_tokens: int = 512) -> Agent:
    base_url = server.anthropic_base_url if provider_name == "anthropic" else server.openai_base_url
    provider = create_provider(provider_name, api_key="k", base_url=base_url)
    model = "claude-haiku-4-5" if provider_name == "anthropic" else "gpt-4.1-mini"
    return Agent(AgentConfig(model=model, interactive=False, max_tokens=max_tokens),
                 AgentParts(provider=provider, tools=[], workspace=Workspace.at(tmp_path)))


async def _run(tmp_path: Path, server: FakeLLMServer, provider_name: str, output_format: str
               ) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(_agent(tmp_path, server, provider_name), "write a lot", output_format, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_text_prints_the_partial_answer_and_says_it_was_cut_off(
        tmp_path: Path, fake_llm: FakeLLMServer, provider_name: str) -> None:
    fake_llm.enqueue(Reply(text=CUT, stop_reason="max_tokens"))
    code, out, err = await _run(tmp_path, fake_llm, provider_name, "text")
    assert code == EXIT_CUT_OFF == 4
    assert out == CUT + "\n"
    assert err == ("loom: the answer was cut off at the output limit (512 tokens, max_tokens in config.toml); "
                   '`loom run --continue "continue"` goes on\n')
    assert "--continue" in err


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_json_carries_the_stop_reason(tmp_path: Path, fake_llm: FakeLLMServer, provider_name: str) -> None:
    fake_llm.enqueue(Reply(text=CUT, stop_reason="max_tokens"))
    code, out, _err = await _run(tmp_path, fake_llm, provider_name, "json")
    result = json.loads(out)
    assert code == EXIT_CUT_OFF
    assert result["stop_reason"] == "max_tokens" and result["result"] == CUT and result["is_error"] is False


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_the_last_stream_json_event_carries_the_stop_reason(
        tmp_path: Path, fake_llm: FakeLLMServer, provider_name: str) -> None:
    fake_llm.enqueue(Reply(text=CUT, stop_reason="max_tokens"))
    code, out, _err = await _run(tmp_path, fake_llm, provider_name, "stream-json")
    last = json.loads(out.splitlines()[-1])
    assert code == EXIT_CUT_OFF
    assert last["type"] == "result" and last["subtype"] == "success"
    assert last["stop_reason"] == "max_tokens" and last["result"] == CUT
    code, out, _err = await _run(tmp_path, fake_llm_again(fake_llm), provider_name, "loom-stream-json")
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "finished"
    assert last["stop_reason"] == "max_tokens" and last["max_output_tokens"] == 512


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_a_whole_answer_still_exits_0_with_end_turn(
        tmp_path: Path, fake_llm: FakeLLMServer, provider_name: str) -> None:
    fake_llm.enqueue(Reply.text("Done."))
    code, out, err = await _run(tmp_path, fake_llm, provider_name, "json")
    assert code == EXIT_OK and json.loads(out)["stop_reason"] == "end_turn"
    assert "cut off" not in err


def test_the_fake_server_ends_each_wire_with_its_own_length_stop(fake_llm: FakeLLMServer) -> None:
    """The cut-off arrives as the APIs send it: ``finish_reason: "length"`` on Chat
    Completions, ``stop_reason: "max_tokens"`` on Messages."""
    import httpx

    messages = [{"role": "user", "content": "hi"}]
    calls = ((fake_llm.anthropic_base_url + "/v1/messages", {"x-api-key": "k", "anthropic-version": "2023-06-01"},
              {"model": "claude-haiku-4-5", "max_tokens": 16, "stream": True, "messages": messages}),
             (fake_llm.openai_base_url + "/chat/completions", {"authorization": "Bearer k"},
              {"model": "gpt-4.1-mini", "stream": True, "messages": messages}))
    streams = []
    for url, headers, body in calls:
        fake_llm.enqueue(Reply(text=CUT, stop_reason="max_tokens"))
        streams.append(httpx.post(url, headers=headers, json=body, timeout=30).text)
    anthropic_stream, openai_stream = streams
    assert '"stop_reason":"max_tokens"' in anthropic_stream.replace(" ", "")
    assert '"finish_reason":"length"' in openai_stream.replace(" ", "")
