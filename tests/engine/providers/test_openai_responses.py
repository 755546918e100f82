"""OpenAIProvider over the Responses API, through the real ``openai`` SDK against the fake
server's ``/v1/responses`` (which checks the stateless contract on every request)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from functools import partial

import pytest

from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.providers.anthropic_provider import AnthropicProvider
from loom_engine.providers.base import StreamText, StreamThinking, StreamToolUseStart
from loom_engine.providers.openai_provider import OpenAIProvider
from loom_engine.providers.openai_responses import WIRE, reasons, uses_responses
from loom_engine.usage import Usage
from tests.conformance import conformance_dir
from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall
from tests.engine.providers.helpers import READ, collect, failure, make_request

MODEL = "gpt-5-codex"
request = partial(make_request, MODEL, cache_key="session-abc")


@pytest.fixture
async def provider(fake_llm: FakeLLMServer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(api_key="sk-test", base_url=fake_llm.openai_base_url, wire_api="responses")
    yield provider
    await provider.aclose()


def accepted(fake_llm: FakeLLMServer) -> dict[str, object]:
    sent = fake_llm.last_request
    assert sent.rejected is None, sent.rejected
    assert sent.path == "/v1/responses"
    body = sent.body
    assert isinstance(body, dict)
    return body


async def test_text_usage_and_the_stateless_request(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    text = "Streaming from a response, delta by delta."
    fake_llm.enqueue(Reply.text(text, chunk_size=6, usage={
        "input_tokens": 40, "output_tokens": 12, "cache_read_input_tokens": 60}))
    events, done = await collect(provider, request(Message.user("hi"), max_tokens=321))
    deltas = [e.text for e in events if isinstance(e, StreamText)]
    assert len(deltas) > 1 and "".join(deltas) == text
    assert done.message.text == text and done.stop_reason == "end_turn"
    assert done.usage == Usage(input_tokens=40, output_tokens=12, cache_read_input_tokens=60)

    body = accepted(fake_llm)
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == "session-abc"
    assert body["instructions"] == "You are Loom." and body["max_output_tokens"] == 321
    assert body["reasoning"] == {"summary": "auto"}  # the model's own default effort
    assert body["input"] == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert body["tools"][0] == {"type": "function", "name": "read_file", "description": "Read a file",
                                "parameters": dict(READ.input_schema), "strict": False}
    assert fake_llm.last_request.headers["authorization"] == "Bearer sk-test"


async def test_reasoning_effort_is_sent(fake_llm: FakeLLMServer) -> None:
    provider = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url, wire_api="responses",
                              reasoning_effort="high")
    fake_llm.enqueue(Reply.text("ok"))
    await collect(provider, request(Message.user("hi")))
    await provider.aclose()
    assert accepted(fake_llm)["reasoning"] == {"summary": "auto", "effort": "high"}


async def test_a_model_that_does_not_reason_gets_no_reasoning_and_keeps_its_temperature(
        provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("ok"))
    await collect(provider, request(Message.user("hi"), model="gpt-4.1", temperature=0.2))
    body = accepted(fake_llm)
    assert "reasoning" not in body and "include" not in body and body["temperature"] == 0.2
    assert reasons("o4-mini") and reasons("gpt-5.1-codex-max") and not reasons("gpt-5-chat-latest")


async def test_reasoning_summary_is_thinking_and_is_replayed_verbatim(
        provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    summary = "**Reading the file first**\n\nThe user wants a.py."
    fake_llm.enqueue(Reply(thinking=summary, tool_calls=(ToolCall("read_file", {"path": "a.py"}, "call_1"),)),
                     Reply.text("It prints hello."))
    events, first = await collect(provider, request(Message.user("what does a.py do?")))
    assert "".join(e.text for e in events if isinstance(e, StreamThinking)) == summary
    assert [e for e in events if isinstance(e, StreamToolUseStart)] == [StreamToolUseStart("call_1", "read_file")]
    thinking, call = first.message.parts
    assert isinstance(thinking, ThinkingPart) and thinking.thinking == summary
    assert isinstance(call, ToolUsePart) and call.id == "call_1"
    assert first.stop_reason == "tool_use"
    assert first.usage.reasoning_tokens == len(summary) // 4  # what the fake reports
    # What the server said the item is, kept whole (its output_item.done event).
    served = next(json.loads(line[5:])["item"] for line in _SEEN
                  if '"response.output_item.done"' in line and '"reasoning"' in line)
    assert thinking.provider_data == {"wire": WIRE, "endpoint": fake_llm.openai_base_url, "item": served}

    # Through the session file and back, then the next request.
    result = Message.tool_results([ToolResultPart("call_1", "print('hello')")])
    history = [Message.from_dict(m.to_dict()) for m in (Message.user("what does a.py do?"), first.message, result)]
    _, second = await collect(provider, request(*history))
    assert second.message.text == "It prints hello."
    items = accepted(fake_llm)["input"]
    assert isinstance(items, list)
    replayed = items[1]
    assert replayed == {k: v for k, v in served.items() if k != "id"}  # ids name nothing under store false
    assert replayed["encrypted_content"] == served["encrypted_content"]
    assert items[2] == {"type": "function_call", "call_id": "call_1", "name": "read_file",
                        "arguments": json.dumps({"path": "a.py"})}
    assert items[3] == {"type": "function_call_output", "call_id": "call_1", "output": "print('hello')"}


_SEEN: list[str] = []  # the data lines the fake server streamed, in order


@pytest.fixture(autouse=True)
def _capture_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the lines the fake server streams (to compare what the SDK handed over)."""
    from tests.doubles.fake_llm import server

    _SEEN.clear()
    original = server._Handler._chunk

    def chunk(self: server._Handler, data: bytes) -> None:
        _SEEN.extend(line for line in data.decode(errors="replace").splitlines() if line.startswith("data:"))
        original(self, data)

    monkeypatch.setattr(server._Handler, "_chunk", chunk)


async def test_the_recorded_turns_replay_their_encrypted_reasoning_byte_for_byte(
        provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    turn1 = conformance_dir("sse", "openai_responses", "aisdk_openai-reasoning-encrypted-content.1.turn1.sse")
    if not turn1.exists():
        pytest.skip(f"conformance data not found at {turn1}")
    recorded = next(json.loads(line[5:])["item"] for line in turn1.read_text().splitlines()
                    if line.startswith("data:") and '"response.output_item.done"' in line and '"reasoning"' in line)
    fake_llm.enqueue(Reply.raw(turn1), Reply.text("The result is 19."))
    _, first = await collect(provider, request(Message.user("12 + 7?")))
    (call,) = first.message.tool_uses
    _, second = await collect(provider, request(Message.user("12 + 7?"), first.message,
                                                Message.tool_results([ToolResultPart(call.id, "19")])))
    items = accepted(fake_llm)["input"]
    assert isinstance(items, list) and items[1]["type"] == "reasoning"
    assert items[1]["encrypted_content"] == recorded["encrypted_content"]
    assert json.dumps(items[1]["encrypted_content"]) in fake_llm.last_request.raw.decode()
    assert items[1]["summary"] == recorded["summary"]
    assert second.message.text == "The result is 19."


async def test_a_tool_round_trip_keeps_the_pairs(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tools(("read_file", {"path": "a.py"}), ("bash", {"command": "ls"}), text="Looking."),
                     Reply.text("Done."))
    _, first = await collect(provider, request(Message.user("look")))
    assert first.stop_reason == "tool_use" and first.message.text == "Looking."
    calls = first.message.tool_uses
    assert [(c.name, dict(c.input)) for c in calls] == [("read_file", {"path": "a.py"}), ("bash", {"command": "ls"})]
    results = Message.tool_results([ToolResultPart(calls[0].id, "x = 1"),
                                    ToolResultPart(calls[1].id, "no such dir", is_error=True)])
    await collect(provider, request(Message.user("look"), first.message, results))
    items = accepted(fake_llm)["input"]
    assert isinstance(items, list)
    assert [i["type"] for i in items] == ["message", "message", "function_call", "function_call",
                                          "function_call_output", "function_call_output"]
    assert items[1]["content"] == [{"type": "output_text", "text": "Looking.", "annotations": []}]
    assert items[5]["output"] == "Error: no such dir"


async def test_a_length_cut_off_is_max_tokens(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("The answer is cut", stop_reason="max_tokens"))
    _, done = await collect(provider, request(Message.user("long answer please")))
    assert done.stop_reason == "max_tokens" and done.message.text == "The answer is cut"


async def test_an_error_event_fails_the_stream(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(text="half an answer", stream_error=("server_error", "The model crashed")))
    events, error = await failure(provider, request(Message.user("hi")))
    assert error.kind == "server" and error.retryable and error.partial_output
    assert "The model crashed" in error.message
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "half an answer"


async def test_http_errors_are_classified_as_on_chat(provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.prompt_too_long())
    _, error = await failure(provider, request(Message.user("hi")))
    assert error.kind == "context_length"


async def test_an_item_openai_does_not_keep_is_not_called_a_missing_model(
        provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.error(404, "Item with id 'rs_1' not found. Items are not persisted when `store` is set "
                                      "to false. Try again with `store` set to true, or remove this item from your "
                                      "input.", type="invalid_request_error", code=""))
    _, error = await failure(provider, request(Message.user("hi")))
    assert error.kind == "bad_request" and not error.retryable
    assert error.message.startswith("OpenAI refused an input item it does not keep (404")
    assert "Item with id 'rs_1' not found" in error.message and "model" not in error.message.split("(")[0]


def test_which_wire() -> None:
    official = OpenAIProvider(api_key="k", base_url="https://api.openai.com/v1")
    assert official.wire == "responses"
    assert OpenAIProvider(api_key="k", base_url="https://api.openai.com/v1", wire_api="chat").wire == "chat"
    assert OpenAIProvider(api_key="k", base_url="http://localhost:11434/v1").wire == "chat"
    assert OpenAIProvider(api_key="k", base_url="http://localhost:8080/v1", wire_api="responses").wire == "responses"
    assert uses_responses("auto", True) and not uses_responses("auto", False)


async def test_a_custom_url_speaks_chat_unless_told(fake_llm: FakeLLMServer) -> None:
    chat = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url)
    fake_llm.enqueue(Reply.text("over chat"))
    _, done = await collect(chat, request(Message.user("hi")))
    await chat.aclose()
    assert fake_llm.last_request.path == "/v1/chat/completions" and done.message.text == "over chat"


async def test_a_chat_session_continues_over_responses_and_back(fake_llm: FakeLLMServer) -> None:
    chat = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url, wire_api="chat")
    responses = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url, wire_api="responses")
    run = ToolCall("bash", {"command": "python a.py"}, "call_r")
    fake_llm.enqueue(Reply.tool("read_file", {"path": "a.py"}, id="call_chat"),
                     Reply(thinking="Now run it.", tool_calls=(run,)),
                     Reply.text("It printed hi."), Reply.text("Yes."))
    history = [Message.user("run a.py")]
    _, one = await collect(chat, request(*history))
    history += [one.message, Message.tool_results([ToolResultPart("call_chat", "print('hi')")])]
    history = [Message.from_dict(m.to_dict()) for m in history]  # as --continue reads them

    _, two = await collect(responses, request(*history))
    items = accepted(fake_llm)["input"]
    assert isinstance(items, list)
    assert [i["type"] for i in items] == ["message", "function_call", "function_call_output"]
    history += [two.message, Message.tool_results([ToolResultPart("call_r", "hi")])]
    history = [Message.from_dict(m.to_dict()) for m in history]

    _, three = await collect(responses, request(*history))
    assert [i["type"] for i in accepted(fake_llm)["input"]] == [  # type: ignore[union-attr]
        "message", "function_call", "function_call_output", "reasoning", "function_call", "function_call_output"]
    history += [three.message, Message.user("sure?")]

    # Back to chat: the reasoning stays behind, every call keeps its result.
    _, four = await collect(chat, request(*history))
    sent = fake_llm.last_request
    assert sent.path == "/v1/chat/completions" and sent.rejected is None
    roles = [(m["role"], [c["id"] for c in m.get("tool_calls") or ()]) for m in sent.body["messages"][1:]]
    assert roles == [("user", []), ("assistant", ["call_chat"]), ("tool", []), ("assistant", ["call_r"]),
                     ("tool", []), ("assistant", []), ("user", [])]
    assert "Now run it." not in sent.raw.decode() and four.message.text == "Yes."
    await chat.aclose()
    await responses.aclose()


async def test_reasoning_is_not_sent_to_another_endpoint_or_provider(fake_llm: FakeLLMServer) -> None:
    thinking = ThinkingPart("Checked.", provider_data={
        "wire": WIRE, "endpoint": "https://api.openai.com/v1",
        "item": {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA-not-this-server", "summary": []}})
    history = (Message.user("hi"), Message.assistant(thinking, TextPart("Hello.")), Message.user("again"))
    local = OpenAIProvider(api_key="k", base_url=fake_llm.openai_base_url, wire_api="responses")
    fake_llm.enqueue(Reply.text("ok"), Reply.text("ok"))
    await collect(local, request(*history))
    assert [i["type"] for i in accepted(fake_llm)["input"]] == ["message", "message", "message"]  # type: ignore[union-attr]

    # Anthropic's signed thinking is not sent over Responses either.
    signed = Message.assistant(ThinkingPart("Mine.", signature="sig-anthropic"), TextPart("Hi."))
    fake_llm.enqueue(Reply.text("ok"))
    await collect(local, request(Message.user("hi"), signed, Message.user("again")))
    assert "sig-anthropic" not in fake_llm.last_request.raw.decode() and fake_llm.last_request.rejected is None

    anthropic = AnthropicProvider(api_key="k", base_url=fake_llm.anthropic_base_url)
    await collect(anthropic, make_request("claude-haiku-4-5", *history))
    await anthropic.aclose()
    await local.aclose()
    assert fake_llm.last_request.rejected is None
    assert "gAAAA-not-this-server" not in fake_llm.last_request.raw.decode()


async def test_the_fake_refuses_a_forged_replay_and_an_unanswered_call(
        provider: OpenAIProvider, fake_llm: FakeLLMServer) -> None:
    forged = ThinkingPart("x", provider_data={
        "wire": WIRE, "endpoint": fake_llm.openai_base_url,
        "item": {"type": "reasoning", "encrypted_content": "gAAAAAfake-never-issued", "summary": []}})
    fake_llm.enqueue(Reply.text("unused"))
    _, error = await failure(provider, request(Message.user("hi"), Message.assistant(forged, TextPart("Hello.")),
                                               Message.user("again")))
    assert error.kind == "bad_request" and "could not be verified" in error.message
    call = ToolUsePart("call_lonely", "read_file", {"path": "a"})
    _, error = await failure(provider, request(Message.user("hi"), Message.assistant(call), Message.user("and?")))
    assert "No tool output found for function call call_lonely" in error.message


def test_a_stream_of_plain_events_without_added_items_folds_the_same() -> None:
    """What a compatible server may send: only ``output_item.done`` items, an error as data."""
    from loom_engine.providers.base import ProviderError
    from loom_engine.providers.openai_provider import _classify
    from loom_engine.providers.openai_responses_stream import ResponsesAccumulator

    acc = ResponsesAccumulator(endpoint="http://x/v1", model="m", service="the server", classify=_classify)
    events = [*acc.feed({"type": "response.output_item.done", "output_index": 0, "item": {
        "type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\": \"a\"}"}}),
        *acc.feed({"type": "response.output_item.done", "output_index": 1, "item": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]}}),
        *acc.feed({"type": "response.completed", "response": {"status": "completed", "usage": {
            "input_tokens": 10, "output_tokens": 3}}})]
    assert events == [StreamToolUseStart("c1", "read_file"), StreamText("Reading.")]
    done = acc.completed()
    assert done.stop_reason == "tool_use" and done.usage == Usage(input_tokens=10, output_tokens=3)
    assert [type(p) for p in done.message.parts] == [ToolUsePart, TextPart]
    with pytest.raises(ProviderError) as info:
        acc.feed({"type": "error", "error": {"type": "invalid_request_error", "code": "bad", "message": "no"}})
    assert info.value.kind == "bad_request" and "no" in info.value.message
