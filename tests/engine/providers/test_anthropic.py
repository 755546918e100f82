"""AnthropicProvider driven through the fake server with the real ``anthropic`` SDK."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from functools import partial

import pytest

from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.providers.anthropic_provider import AnthropicProvider, build_params, to_wire_messages
from loom_engine.providers.base import (
    StreamText,
    StreamThinking,
    StreamToolUseStart,
)
from loom_engine.usage import Usage
from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall, free_port, validate_anthropic
from tests.engine.providers.helpers import collect, failure, make_request

MODEL = "claude-haiku-4-5"
request = partial(make_request, MODEL)


def api_key_sent(headers: Mapping[str, str]) -> str:
    # SDK 2.x sends the key as a bearer token; older ones used x-api-key.
    if "x-api-key" in headers:
        return headers["x-api-key"]
    return headers.get("authorization", "").removeprefix("Bearer ")


@pytest.fixture
async def provider(fake_llm: FakeLLMServer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake_llm.anthropic_base_url)
    yield provider
    await provider.aclose()


# --- happy paths --------------------------------------------------------------------------


async def test_text_streams_in_chunks_with_usage(provider: AnthropicProvider, fake_llm: FakeLLMServer) -> None:
    text = "Hello! The answer spans several chunks."
    fake_llm.enqueue(Reply.text(text, chunk_size=5, usage={
        "input_tokens": 120, "output_tokens": 9, "cache_read_input_tokens": 800,
        "cache_creation_input_tokens": 40}))
    events, done = await collect(provider, request(Message.user("hi")))
    deltas = [e.text for e in events if isinstance(e, StreamText)]
    assert len(deltas) > 1 and "".join(deltas) == text
    assert done.message.role == "assistant" and done.message.text == text
    assert done.stop_reason == "end_turn"
    assert done.usage == Usage(120, 9, 800, 40)


async def test_request_carries_cache_breakpoints_and_key(provider: AnthropicProvider,
                                                          fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("ok"))
    await collect(provider, request(Message.user("first"), Message.assistant(TextPart("reply")),
                                    Message.user("second")))
    sent = fake_llm.last_request
    assert sent.rejected is None
    assert api_key_sent(sent.headers) == "sk-ant-test"
    assert sent.headers.get("x-stainless-retry-count") == "0"
    body = sent.body
    assert body["stream"] is True and body["model"] == MODEL
    assert body["system"] == [{"type": "text", "text": "You are Loom.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["tools"][0]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][-1]
    assert "thinking" not in body and "temperature" not in body


async def test_tool_calls_over_several_turns_pass_strict_validation(provider: AnthropicProvider,
                                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(
        Reply.tool("read_file", {"path": "README.md"}, text="Let me read it."),
        Reply.tools(ToolCall("bash", {"command": "ls"}), ToolCall("read_file", {"path": "src/app.py"})),
        Reply.text("All done."),
    )
    history = [Message.user("look around")]
    for _ in range(3):
        events, done = await collect(provider, request(*history))
        history.append(done.message)
        if not done.message.tool_uses:
            break
        starts = [e for e in events if isinstance(e, StreamToolUseStart)]
        assert [(s.id, s.name) for s in starts] == [(t.id, t.name) for t in done.message.tool_uses]
        assert done.stop_reason == "tool_use"
        history.append(Message.tool_results([ToolResultPart(t.id, f"result of {t.name}")
                                             for t in done.message.tool_uses]))
    assert done.message.text == "All done."
    requests = fake_llm.requests
    assert len(requests) == 3 and all(r.rejected is None for r in requests)
    last = requests[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    first_call = last[1]["content"][1]
    assert first_call["type"] == "tool_use" and first_call["input"] == {"path": "README.md"}
    results = last[4]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in results] == [b["id"] for b in last[3]["content"]]


async def test_parallel_tool_calls_with_arguments_split_over_chunks(provider: AnthropicProvider,
                                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tools(ToolCall("read_file", {"path": "a.py"}, id="toolu_A"),
                                 ToolCall("read_file", {"path": "b.py"}, id="toolu_B"),
                                 ToolCall("bash", {"command": "git status --short"}, id="toolu_C"),
                                 chunk_size=3))
    events, done = await collect(provider, request(Message.user("read both")))
    assert [e.id for e in events if isinstance(e, StreamToolUseStart)] == ["toolu_A", "toolu_B", "toolu_C"]
    assert [(t.id, dict(t.input)) for t in done.message.tool_uses] == [
        ("toolu_A", {"path": "a.py"}), ("toolu_B", {"path": "b.py"}), ("toolu_C", {"command": "git status --short"})]
    assert all(t.raw_input is None for t in done.message.tool_uses)


async def test_thinking_is_requested_streamed_and_sent_back_signed(provider: AnthropicProvider,
                                                                   fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("read_file", {"path": "x"}, thinking="I should read x first.",
                                signature="sig-123", redacted_thinking="opaque-blob"),
                     Reply.text("x is fine"))
    req = request(Message.user("check x"), thinking_budget=2048, max_tokens=1024, temperature=0.3)
    events, done = await collect(provider, req)
    assert "".join(e.text for e in events if isinstance(e, StreamThinking)) == "I should read x first."
    thinking = [p for p in done.message.parts if isinstance(p, ThinkingPart)]
    assert thinking[0] == ThinkingPart("I should read x first.", signature="sig-123")
    assert thinking[1].redacted_data == "opaque-blob"
    sent = fake_llm.last_request.body
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent["max_tokens"] > 2048 and "temperature" not in sent

    tool_use = done.message.tool_uses[0]
    follow = request(Message.user("check x"), done.message,
                     Message.tool_results([ToolResultPart(tool_use.id, "fine")]), thinking_budget=2048)
    await collect(provider, follow)
    sent2 = fake_llm.last_request
    assert sent2.rejected is None
    assistant = sent2.body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "I should read x first.", "signature": "sig-123"}
    assert assistant[1] == {"type": "redacted_thinking", "data": "opaque-blob"}


async def test_tool_input_cut_by_max_tokens_keeps_raw_text(provider: AnthropicProvider,
                                                           fake_llm: FakeLLMServer) -> None:
    raw = '{"path": "notes.txt", "content": "a long text that was cut'
    fake_llm.enqueue(Reply(text="Writing it.", tool_calls=(ToolCall("write_file", raw_arguments=raw),),
                           stop_reason="max_tokens"))
    _, done = await collect(provider, request(Message.user("write")))
    assert done.stop_reason == "max_tokens"
    (call,) = done.message.tool_uses
    assert call.input == {} and call.raw_input == raw


async def test_base_url_from_environment(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    fake_llm.enqueue(Reply.text("via env"))
    provider = AnthropicProvider()
    try:
        _, done = await collect(provider, request(Message.user("hi")))
    finally:
        await provider.aclose()
    assert done.message.text == "via env"
    assert api_key_sent(fake_llm.last_request.headers) == "sk-ant-env"


async def test_missing_key_for_anthropic_itself_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    _, err = await failure(AnthropicProvider(), request(Message.user("hi")))
    assert err.kind == "config" and "ANTHROPIC_API_KEY" in err.message


async def test_custom_endpoint_needs_no_key(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local server (llama.cpp's Anthropic endpoint) or a proxy: a placeholder is sent."""
    from loom_engine.providers.endpoints import PLACEHOLDER_KEY

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    fake_llm.enqueue(Reply.text("local model here"))
    provider = AnthropicProvider()
    try:
        _, done = await collect(provider, request(Message.user("hi")))
    finally:
        await provider.aclose()
    assert done.message.text == "local model here"
    assert api_key_sent(fake_llm.last_request.headers) == PLACEHOLDER_KEY


# --- faults -------------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "kind", "needle"), [
    (Reply.error(400, "messages: roles must alternate"), "bad_request", "roles must alternate"),
    (Reply.error(401), "auth", "ANTHROPIC_API_KEY"),
    (Reply.error(403), "permission", "403"),
    (Reply.error(404), "not_found", f"model '{MODEL}' not found"),
    (Reply.prompt_too_long(), "context_length", "prompt is too long"),
    (Reply.error(429, retry_after=7), "rate_limit", "retry after 7s"),
    (Reply.error(500), "server", "500"),
    (Reply.error(529), "overloaded", "Overloaded"),
])
async def test_http_errors_map_to_kinds(provider: AnthropicProvider, fake_llm: FakeLLMServer, reply: Reply,
                                        kind: str, needle: str) -> None:
    fake_llm.enqueue(reply)
    events, err = await failure(provider, request(Message.user("hi")))
    assert events == []
    assert err.kind == kind
    assert needle in err.message
    assert "\n" not in err.message and "Traceback" not in err.message
    assert err.status == reply.status
    assert err.retryable == (kind in ("rate_limit", "server", "overloaded"))
    assert err.partial_output is False
    if kind == "rate_limit":
        assert err.retry_after == 7.0


async def test_connection_refused_names_the_base_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    _, err = await failure(AnthropicProvider(api_key="k", base_url=url), request(Message.user("hi")))
    assert err.kind == "connection" and err.retryable
    assert url in err.message and "Connection refused" in err.message and "\n" not in err.message


async def test_stream_broken_mid_answer_reports_partial_output(provider: AnthropicProvider,
                                                               fake_llm: FakeLLMServer) -> None:
    # message_start, ping, block start, then two text deltas, then the connection drops.
    fake_llm.enqueue(Reply.broken("abcdefghijklmnopqrstuvwxyz", after=5, chunk_size=4))
    events, err = await failure(provider, request(Message.user("hi")))
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "abcdefgh"
    assert err.kind == "stream_broken" and err.partial_output is True and err.retryable


async def test_stream_broken_before_output_is_not_partial(provider: AnthropicProvider,
                                                          fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.broken("never shown", after=1))
    events, err = await failure(provider, request(Message.user("hi")))
    assert events == []
    assert err.kind == "stream_broken" and err.partial_output is False


async def test_error_event_mid_stream(provider: AnthropicProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(text="partial answer", stream_error=("overloaded_error", "Overloaded")))
    events, err = await failure(provider, request(Message.user("hi")))
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "partial answer"
    assert err.kind == "overloaded" and err.partial_output is True and "Overloaded" in err.message


async def test_read_timeout_is_a_timeout(fake_llm: FakeLLMServer) -> None:
    reply, gate = Reply.text("late").held()
    fake_llm.enqueue(reply)
    provider = AnthropicProvider(api_key="k", base_url=fake_llm.anthropic_base_url, timeout=0.3)
    try:
        _, err = await failure(provider, request(Message.user("hi")))
    finally:
        gate.set()
        await provider.aclose()
    assert err.kind == "timeout" and err.retryable


async def test_closing_the_stream_closes_the_http_response(provider: AnthropicProvider,
                                                           fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("slow " * 40, chunk_size=5, chunk_delay=0.05), Reply.text("next"))
    stream = provider.stream(request(Message.user("hi")))
    assert isinstance(await stream.__anext__(), StreamText)
    await stream.aclose()  # type: ignore[attr-defined]
    assert await asyncio.to_thread(fake_llm.wait_for_disconnects, 1)
    _, done = await collect(provider, request(Message.user("again")))
    assert done.message.text == "next"


# --- wire conversion ----------------------------------------------------------------------


def test_conversion_merges_roles_drops_empty_text_and_orders_tool_results() -> None:
    call = ToolUsePart("toolu_1", "read_file", {"path": "a"})
    messages = [
        Message.user("one"),
        Message.user("   "),  # whitespace only: dropped
        Message.user("two"),
        Message.assistant(ThinkingPart("unsigned thoughts"), TextPart(""), call),
        Message.tool_results([ToolResultPart("toolu_1", "boom", is_error=True)]),
        Message("system", (TextPart("The user interrupted the previous answer."),)),
        Message.assistant(TextPart("")),  # nothing left: dropped
        Message.user("go on"),
    ]
    wire = to_wire_messages(messages)
    assert wire == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                            "input": {"path": "a"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
            {"type": "text", "text": "The user interrupted the previous answer."},
            {"type": "text", "text": "go on"}]},
    ]
    params = build_params(request(*messages))
    assert validate_anthropic(params) is None


def test_tool_results_come_first_even_when_text_was_first() -> None:
    call = ToolUsePart("toolu_9", "bash", {"command": "sleep 30"})
    messages = [Message.user("run it"), Message.assistant(call),
                Message("user", (TextPart("[interrupted]"), ToolResultPart("toolu_9", "interrupted by user")))]
    params = build_params(request(*messages))
    assert [b["type"] for b in params["messages"][-1]["content"]] == ["tool_result", "text"]
    assert validate_anthropic(params) is None


def test_conversation_starting_with_assistant_gets_a_user_turn_first() -> None:
    wire = to_wire_messages([Message.assistant(TextPart("summary of earlier work")), Message.user("continue")])
    assert wire[0]["role"] == "user" and wire[1]["role"] == "assistant"


def test_at_most_four_cache_breakpoints() -> None:
    params = build_params(request(Message.user("a"), Message.assistant(TextPart("b")), Message.user("c")))
    marks = (sum("cache_control" in b for b in params["system"])
             + sum("cache_control" in t for t in params["tools"])
             + sum("cache_control" in b for m in params["messages"] for b in m["content"]))
    assert marks == 3
