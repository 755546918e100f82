"""OpenAIProvider driven through the fake server with the real ``openai`` SDK."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from functools import partial

import pytest

from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.providers.base import (
    StreamText,
    StreamThinking,
    StreamToolUseStart,
)
from loom_engine.providers.openai_provider import (
    PLACEHOLDER_KEY,
    OpenAIProvider,
    build_params,
    to_wire_messages,
)
from loom_engine.usage import Usage
from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall, free_port, validate_openai
from tests.engine.providers.helpers import READ, collect, failure, make_request

MODEL = "gpt-4o"
request = partial(make_request, MODEL)


@pytest.fixture
async def provider(fake_llm: FakeLLMServer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(api_key="sk-test", base_url=fake_llm.openai_base_url)
    yield provider
    await provider.aclose()


async def test_text_and_usage_with_cached_tokens(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    text = "Streaming from a chat completion, chunk by chunk."
    fake_llm.enqueue(Reply.text(text, chunk_size=6, usage={
        "input_tokens": 40, "output_tokens": 12, "cache_read_input_tokens": 60}))
    events, done = await collect(provider, request(Message.user("hi")))
    deltas = [e.text for e in events if isinstance(e, StreamText)]
    assert len(deltas) > 1 and "".join(deltas) == text
    assert done.message.text == text and done.stop_reason == "end_turn"
    # prompt_tokens=100 of which cached_tokens=60
    assert done.usage == Usage(input_tokens=40, output_tokens=12, cache_read_input_tokens=60)


async def test_request_shape(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("ok"))
    await collect(provider, request(Message.user("hello"), max_tokens=321, temperature=0.2))
    sent = fake_llm.last_request
    assert sent.rejected is None
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][:2] == [{"role": "system", "content": "You are Loom."},
                                    {"role": "user", "content": "hello"}]
    # A compatible server gets max_tokens; only api.openai.com gets max_completion_tokens.
    assert body["max_tokens"] == 321 and "max_completion_tokens" not in body
    assert body["temperature"] == 0.2
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "read_file", "description": "Read a file", "parameters": READ.input_schema}}


def test_official_api_gets_max_completion_tokens() -> None:
    params = build_params(request(Message.user("x"), max_tokens=99), official=True)
    assert params["max_completion_tokens"] == 99 and "max_tokens" not in params


async def test_tool_calls_over_several_turns_pass_strict_validation(provider: OpenAIProvider,
                                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(
        Reply.tool("read_file", {"path": "README.md"}, text="Reading."),
        Reply.tools(ToolCall("bash", {"command": "ls -la"}), ToolCall("read_file", {"path": "src/app.py"}),
                    chunk_size=4),
        Reply.text("Finished."),
    )
    history = [Message.user("explore")]
    for _ in range(3):
        events, done = await collect(provider, request(*history))
        history.append(done.message)
        if not done.message.tool_uses:
            break
        assert done.stop_reason == "tool_use"
        starts = [(e.id, e.name) for e in events if isinstance(e, StreamToolUseStart)]
        assert starts == [(t.id, t.name) for t in done.message.tool_uses]
        history.append(Message.tool_results([ToolResultPart(t.id, f"output of {t.name}")
                                             for t in done.message.tool_uses]))
    assert done.message.text == "Finished."
    requests = fake_llm.requests
    assert len(requests) == 3 and all(r.rejected is None for r in requests)
    last = requests[-1].body["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool", "tool"]
    second = last[4]
    assert second["content"] is None
    assert [c["function"]["name"] for c in second["tool_calls"]] == ["bash", "read_file"]
    assert second["tool_calls"][0]["function"]["arguments"] == '{"command": "ls -la"}'
    assert [m["tool_call_id"] for m in last[5:]] == [c["id"] for c in second["tool_calls"]]


async def test_parallel_tool_calls_arguments_split_by_index(provider: OpenAIProvider,
                                                            fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tools(ToolCall("read_file", {"path": "a.py"}, id="call_a"),
                                 ToolCall("read_file", {"path": "b.py"}, id="call_b"), chunk_size=2))
    _, done = await collect(provider, request(Message.user("both")))
    assert [(t.id, dict(t.input)) for t in done.message.tool_uses] == [
        ("call_a", {"path": "a.py"}), ("call_b", {"path": "b.py"})]


async def test_reasoning_deltas_are_thinking_and_never_sent_back(provider: OpenAIProvider,
                                                                 fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(text="42", thinking="compute it"), Reply.text("ok"))
    events, done = await collect(provider, request(Message.user("answer")))
    assert "".join(e.text for e in events if isinstance(e, StreamThinking)) == "compute it"
    assert isinstance(done.message.parts[0], ThinkingPart)
    await collect(provider, request(Message.user("answer"), done.message, Message.user("thanks"),
                                    Message.assistant(ThinkingPart("signed", signature="s")),
                                    Message.user("again")))
    wire = fake_llm.last_request.body["messages"]
    assert fake_llm.last_request.rejected is None
    assert {"role": "assistant", "content": "42"} in wire
    assert "signed" not in str(wire) and "compute it" not in str(wire)


@pytest.mark.parametrize(("stop", "expected"), [("length", "max_tokens"), ("content_filter", "refusal"),
                                                ("stop", "end_turn")])
async def test_finish_reason_mapping(provider: OpenAIProvider, fake_llm: FakeLLMServer, stop: str,
                                     expected: str) -> None:
    fake_llm.enqueue(Reply(text="some text", stop_reason=stop))
    _, done = await collect(provider, request(Message.user("hi")))
    assert done.stop_reason == expected


async def test_arguments_cut_by_length_keep_raw_text(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    raw = '{"path": "a.txt", "content": "unfinish'
    fake_llm.enqueue(Reply(tool_calls=(ToolCall("write_file", raw_arguments=raw),), stop_reason="length"))
    _, done = await collect(provider, request(Message.user("write")))
    (call,) = done.message.tool_uses
    assert done.stop_reason == "max_tokens" and call.input == {} and call.raw_input == raw


async def test_local_server_needs_no_key(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.enqueue(Reply.text("local model here"))
    provider = OpenAIProvider()
    try:
        _, done = await collect(provider, request(Message.user("hi"), model="llama3.2"))
    finally:
        await provider.aclose()
    assert done.message.text == "local model here"
    assert fake_llm.last_request.headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


async def test_official_api_without_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _, err = await failure(OpenAIProvider(), request(Message.user("hi")))
    assert err.kind == "config" and "OPENAI_API_KEY" in err.message


# --- faults -------------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "kind", "needle"), [
    (Reply.error(400, "Invalid value for 'temperature'"), "bad_request", "temperature"),
    (Reply.error(401), "auth", "OPENAI_API_KEY"),
    (Reply.error(403), "permission", "403"),
    (Reply.error(404), "not_found", f"model '{MODEL}' not found"),
    (Reply.prompt_too_long(), "context_length", "maximum context length"),
    (Reply.error(429, retry_after=3), "rate_limit", "retry after 3s"),
    (Reply.error(429, "You exceeded your current quota", code="insufficient_quota"), "usage_limit", "quota"),
    (Reply.error(500), "server", "500"),
    (Reply.error(529), "overloaded", "overloaded"),
])
async def test_http_errors_map_to_kinds(provider: OpenAIProvider, fake_llm: FakeLLMServer, reply: Reply,
                                        kind: str, needle: str) -> None:
    fake_llm.enqueue(reply)
    events, err = await failure(provider, request(Message.user("hi")))
    assert events == []
    assert err.kind == kind
    assert needle in err.message
    assert "\n" not in err.message and "Traceback" not in err.message
    assert err.status == reply.status
    assert err.retryable == (kind in ("rate_limit", "server", "overloaded"))
    if kind == "rate_limit":
        assert err.retry_after == 3.0


async def test_connection_refused_names_the_base_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    _, err = await failure(OpenAIProvider(api_key="k", base_url=url), request(Message.user("hi")))
    assert err.kind == "connection" and url in err.message and err.retryable
    assert "Connection refused" in err.message


async def test_stream_broken_mid_answer_reports_partial_output(provider: OpenAIProvider,
                                                               fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.broken("abcdefghijklmnopqrstuvwxyz", after=3, chunk_size=4))
    events, err = await failure(provider, request(Message.user("hi")))
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "abcdefgh"
    assert err.kind == "stream_broken" and err.partial_output is True and err.retryable


async def test_error_object_mid_stream(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(text="half an answer", stream_error=("server_error", "The server had an error")))
    events, err = await failure(provider, request(Message.user("hi")))
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "half an answer"
    assert err.kind == "server" and err.partial_output is True and "The server had an error" in err.message


async def test_closing_the_stream_closes_the_http_response(provider: OpenAIProvider,
                                                           fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("slow " * 40, chunk_size=5, chunk_delay=0.05))
    stream = provider.stream(request(Message.user("hi")))
    assert isinstance(await stream.__anext__(), StreamText)
    await stream.aclose()  # type: ignore[attr-defined]
    assert await asyncio.to_thread(fake_llm.wait_for_disconnects, 1)


# --- wire conversion ----------------------------------------------------------------------


def test_conversion_of_an_interrupted_transcript_is_valid() -> None:
    call_1 = ToolUsePart("call_1", "bash", {"command": "sleep 30"})
    call_2 = ToolUsePart("call_2", "read_file", {}, raw_input='{"path": ')
    messages = [
        Message.user("run both"),
        Message.assistant(ThinkingPart("t", signature="s"), TextPart(""), call_1, call_2),
        Message("user", (TextPart("The user interrupted."), ToolResultPart("call_1", "interrupted by user"),
                         ToolResultPart("call_2", "invalid JSON arguments", is_error=True))),
        Message.assistant(TextPart("")),
        Message("system", (TextPart("Note: the bash call was cut off."),)),
        Message.user("continue"),
    ]
    wire = to_wire_messages("sys", messages)
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "user"]
    # Arguments that did not parse go back as an object recording them, never as broken JSON.
    assert json.loads(wire[2]["tool_calls"][1]["function"]["arguments"]) == {"_invalid_arguments": '{"path": '}
    assert wire[4]["content"].startswith("Error: ")
    assert wire[5]["content"] == "The user interrupted.\n\nNote: the bash call was cut off.\n\ncontinue"
    assert validate_openai({"model": "m", "messages": wire}) is None
