"""Recorded real streams replayed byte for byte through Loom's providers.

Each ``.sse`` file under ``../shared/conformance/sse/anthropic`` and ``.../openai_chat``
(recorded by the official SDKs' and other clients' test suites) is served unchanged
by the fake server as the response body; the provider must end with exactly the
text, tool calls (ids, names, parsed arguments), stop reason and usage that
``expected_summaries.json`` gives, or raise the right ProviderError for an error
stream (``sdkpy_error_overloaded.sse`` -> ``overloaded``).

``.../openai_responses`` (OpenAI's Responses API, recorded by the AI SDK's suite) goes
the same way through the provider's Responses wire: function calls, message text and
reasoning are kept, each reasoning item with the ``encrypted_content`` its
``output_item.done`` event carries (what the next request replays); the item kinds of
hosted and custom tools Loom never declares are not kept. The ``.1.sse`` files that hold
several responses in one body are covered by their ``.turnN`` parts.

How the summaries map onto Loom's neutral message:

* Anthropic content blocks of kinds Loom neither acts on nor sends back
  (``compaction``, ``fallback``) are not kept; empty text blocks are dropped (the
  refusal stream's only block is ``""``). A tool call cut by ``max_tokens`` keeps
  ``input == {}`` and the partial JSON in ``raw_input``.
* OpenAI: Loom asks for one choice, so only choice 0 counts (the ``n=3`` recording);
  a refusal becomes the message text with stop reason ``refusal``; finish reasons
  map stop->end_turn, tool_calls->tool_use, length->max_tokens; usage input tokens
  are ``prompt_tokens - cached_tokens``. Summaries ending in
  ``...[truncated in summary]`` are compared as prefixes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from loom_engine.messages import Message, TextPart, ThinkingPart, ToolUsePart
from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.base import ProviderError, ProviderRequest, StreamCompleted, StreamText
from loom_engine.providers.openai_provider import FINISH_REASONS, OpenAIProvider
from loom_engine.providers.openai_responses import WIRE
from loom_engine.usage import Usage
from tests.conformance import conformance_dir, require
from tests.doubles.fake_llm import FakeLLMServer, Reply

SSE_DIR = conformance_dir("sse")
TRUNCATED = "...[truncated in summary]"

require(SSE_DIR / "expected_summaries.json")

EXPECTED: dict[str, Any] = json.loads((SSE_DIR / "expected_summaries.json").read_text())


def files(kind: str) -> list[str]:
    return sorted(f"{kind}/{p.name}" for p in (SSE_DIR / kind).glob("*.sse"))


def test_every_recording_has_a_summary() -> None:
    for name in files("anthropic") + files("openai_chat") + files("openai_responses"):
        assert name in EXPECTED
    assert len(files("anthropic")) >= 16 and len(files("openai_chat")) >= 13


def request(model: str) -> ProviderRequest:
    return ProviderRequest(model=model, system="", messages=(Message.user("hello"),), cache_key="session-1")


async def replay(provider: AnthropicProvider | OpenAIProvider, server: FakeLLMServer, name: str,
                 model: str) -> tuple[list[Any], StreamCompleted | ProviderError]:
    server.enqueue(Reply.raw(SSE_DIR / name))
    events: list[Any] = []
    try:
        async for event in provider.stream(request(model)):
            events.append(event)
    except ProviderError as err:
        return events, err
    finally:
        await provider.aclose()
    assert isinstance(events[-1], StreamCompleted)
    return events, events[-1]


def assert_text(actual: str, expected: str) -> None:
    if expected.endswith(TRUNCATED):
        assert actual.startswith(expected[: -len(TRUNCATED)])
    else:
        assert actual == expected


@pytest.mark.parametrize("name", files("anthropic"))
async def test_anthropic_recording(name: str, fake_llm: FakeLLMServer) -> None:
    summary = EXPECTED[name]
    provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake_llm.anthropic_base_url)
    events, outcome = await replay(provider, fake_llm, name, "claude-haiku-4-5")

    if summary.get("errors"):
        assert isinstance(outcome, ProviderError)
        (error,) = summary["errors"]
        assert error["type"] == "overloaded_error" and outcome.kind == "overloaded"
        assert error["message"] in outcome.message
        assert outcome.retryable
        return

    assert isinstance(outcome, StreamCompleted)
    message = outcome.message
    content = summary["content"]
    expected_text = "".join(b["text"] for b in content if b["type"] == "text")
    assert message.text == expected_text
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == expected_text

    thinking = [p.thinking for p in message.parts if isinstance(p, ThinkingPart)]
    assert thinking == [b["thinking"] for b in content if b["type"] == "thinking"]

    calls = [(p.id, p.name, dict(p.input), p.raw_input) for p in message.parts if isinstance(p, ToolUsePart)]
    assert calls == [(b["id"], b["name"], b["input"], b.get("input_partial_json"))
                     for b in content if b["type"] == "tool_use"]

    kept = [b for b in content if b["type"] in ("thinking", "tool_use") or (b["type"] == "text" and b["text"])]
    assert len(message.parts) == len(kept)
    assert [type(p) for p in message.parts] == [
        {"text": TextPart, "thinking": ThinkingPart, "tool_use": ToolUsePart}[b["type"]] for b in kept]

    assert outcome.stop_reason == summary["stop_reason"]
    usage = summary["usage_final"]
    assert outcome.usage == Usage(
        input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0),
        cache_read_input_tokens=usage.get("cache_read_input_tokens") or 0,
        cache_creation_input_tokens=usage.get("cache_creation_input_tokens") or 0)


@pytest.mark.parametrize("name", files("openai_chat"))
async def test_openai_chat_recording(name: str, fake_llm: FakeLLMServer) -> None:
    summary = EXPECTED[name]
    provider = OpenAIProvider(api_key="sk-test", base_url=fake_llm.openai_base_url)
    events, outcome = await replay(provider, fake_llm, name, "gpt-4o")
    assert isinstance(outcome, StreamCompleted)
    choice = summary["choices"][0]
    message = outcome.message

    expected_text = (choice["content"] or "") + (choice["refusal"] or "")
    assert_text(message.text, expected_text)
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == message.text

    calls = [(p.id, p.name, dict(p.input)) for p in message.tool_uses]
    assert calls == [(c["id"], c["name"], json.loads(c["arguments"])) for c in choice["tool_calls"]]
    assert all(p.raw_input is None for p in message.tool_uses)

    if choice["refusal"]:
        assert outcome.stop_reason == "refusal"
    else:
        assert outcome.stop_reason == FINISH_REASONS[choice["finish_reason"]]

    usage = summary["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    assert outcome.usage == Usage(input_tokens=usage["prompt_tokens"] - cached,
                                  output_tokens=usage["completion_tokens"], cache_read_input_tokens=cached)


def responses_files() -> list[str]:
    return [name for name in files("openai_responses") if "multiple_responses_in_one_file" not in EXPECTED[name]]


def done_items(name: str) -> list[dict[str, Any]]:
    """The ``output_item.done`` items of a recording, as the server sent them."""
    found = []
    for line in (SSE_DIR / name).read_text().splitlines():
        if line.startswith("data:"):
            data = json.loads(line[5:])
            if data.get("type") == "response.output_item.done":
                found.append(data["item"])
    return found


def test_the_responses_recordings_are_all_replayed() -> None:
    assert len(responses_files()) >= 14
    assert all(name in EXPECTED for name in files("openai_responses"))


@pytest.mark.parametrize("name", responses_files())
async def test_openai_responses_recording(name: str, fake_llm: FakeLLMServer) -> None:
    summary = EXPECTED[name]
    provider = OpenAIProvider(api_key="sk-test", base_url=fake_llm.openai_base_url, wire_api="responses")
    events, outcome = await replay(provider, fake_llm, name, "gpt-5.1-codex-max")
    assert fake_llm.last_request.path == "/v1/responses"

    if summary["final_status"] == "failed":
        assert isinstance(outcome, ProviderError)
        first = summary["errors"][0]
        assert first["message"] in outcome.message and first["code"] in outcome.message
        assert not outcome.retryable  # a quota is not fixed by asking again at once
        return

    assert isinstance(outcome, StreamCompleted)
    message = outcome.message
    items = summary["output_items"]
    # A reasoning item with neither a summary nor encrypted content has nothing to show or replay.
    kept = [i for i in done_items(name) if i["type"] in ("message", "function_call")
            or (i["type"] == "reasoning" and (i.get("summary") or i.get("encrypted_content")))]
    assert [type(p) for p in message.parts] == [
        {"reasoning": ThinkingPart, "message": TextPart, "function_call": ToolUsePart}[i["type"]] for i in kept]

    expected_text = "".join(i["text"] for i in items if i["type"] == "message")
    assert message.text == expected_text
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == expected_text

    calls = [(p.id, p.name, dict(p.input)) for p in message.tool_uses]
    assert calls == [(i["call_id"], i["name"], json.loads(i["arguments"]))
                     for i in items if i["type"] == "function_call"]
    assert all(p.raw_input is None for p in message.tool_uses)

    reasoning = [p for p in message.parts if isinstance(p, ThinkingPart)]
    recorded = [i for i in kept if i["type"] == "reasoning"]
    assert [p.provider_data for p in reasoning] == [
        {"wire": WIRE, "endpoint": fake_llm.openai_base_url, "item": item} for item in recorded]
    assert all(p.thinking for p in reasoning)  # the summaries, shown as thinking

    assert outcome.stop_reason == ("tool_use" if message.tool_uses else "end_turn")
    usage = summary["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert outcome.usage == Usage(input_tokens=usage["input_tokens"] - cached, output_tokens=usage["output_tokens"],
                                  cache_read_input_tokens=cached,
                                  reasoning_tokens=usage["output_tokens_details"]["reasoning_tokens"])
