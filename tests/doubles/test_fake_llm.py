"""The fake LLM server itself: strict validation, error shapes, scripting, recording."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall

ANTHROPIC_HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
OPENAI_HEADERS = {"authorization": "Bearer k"}


def anthropic_post(server: FakeLLMServer, body: dict[str, Any], headers: dict[str, str] | None = None,
                   ) -> httpx.Response:
    return httpx.post(f"{server.anthropic_base_url}/v1/messages", json=body,
                      headers=ANTHROPIC_HEADERS if headers is None else headers, timeout=10)


def openai_post(server: FakeLLMServer, body: dict[str, Any], headers: dict[str, str] | None = None,
                ) -> httpx.Response:
    return httpx.post(f"{server.openai_base_url}/chat/completions", json=body,
                      headers=OPENAI_HEADERS if headers is None else headers, timeout=10)


def messages_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": messages, "stream": True, **extra}


def sse_events(text: str) -> list[tuple[str | None, str]]:
    out = []
    for block in text.strip().split("\n\n"):
        event = None
        data = ""
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        out.append((event, data))
    return out


TOOL_USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash",
                                               "input": {"command": "ls"}}]}
TOOL_RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]}


# --- Anthropic strictness ---------------------------------------------------------------------


@pytest.mark.parametrize(("messages", "needle"), [
    ([{"role": "user", "content": "hi"}, TOOL_USE, {"role": "user", "content": "what now?"}],
     "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
    ([{"role": "user", "content": "hi"}, TOOL_USE],
     "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}, TOOL_RESULT],
     "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"),
    ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "text content blocks must be non-empty"),
    ([{"role": "user", "content": [{"type": "text", "text": "  \n"}]}], "non-whitespace text"),
    ([{"role": "assistant", "content": "hello"}, {"role": "user", "content": "hi"}],
     'first message must use the "user" role'),
    ([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "x"}]},
      {"role": "user", "content": "more"}], "thinking.signature: Field required"),
    ([{"role": "user", "content": "hi"}, TOOL_USE,
      {"role": "user", "content": [{"type": "text", "text": "note"}, TOOL_RESULT["content"][0]]}],
     "tool_result blocks must come before any other content"),
    ([{"role": "system", "content": "hi"}], "Input should be 'user' or 'assistant'"),
    ([{"role": "user", "content": ""}], "must have non-empty content"),
])
def test_anthropic_rejects_invalid_transcripts(fake_llm: FakeLLMServer, messages: list[dict[str, Any]],
                                               needle: str) -> None:
    fake_llm.enqueue(Reply.text("must not be used"))
    response = anthropic_post(fake_llm, messages_body(messages))
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert needle in body["error"]["message"]
    assert response.headers["request-id"].startswith("req_")
    assert fake_llm.last_request.rejected == body["error"]["message"]
    assert fake_llm.pending_replies == 1  # a rejected request consumes no reply


def test_anthropic_rejects_more_than_four_cache_breakpoints(fake_llm: FakeLLMServer) -> None:
    mark = {"cache_control": {"type": "ephemeral"}}
    content = [{"type": "text", "text": f"part {i}", **mark} for i in range(5)]
    response = anthropic_post(fake_llm, messages_body([{"role": "user", "content": content}]))
    assert response.status_code == 400 and "maximum of 4 blocks with cache_control" in response.text


def test_anthropic_needs_a_key_and_a_version(fake_llm: FakeLLMServer) -> None:
    body = messages_body([{"role": "user", "content": "hi"}])
    response = anthropic_post(fake_llm, body, headers={})
    assert response.status_code == 401 and response.json()["error"]["type"] == "authentication_error"
    response = anthropic_post(fake_llm, body, headers={"x-api-key": "k"})
    assert response.status_code == 400 and "anthropic-version" in response.json()["error"]["message"]


def test_anthropic_valid_tool_round_trip_streams(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("done"))
    messages = [{"role": "user", "content": "hi"}, TOOL_USE, TOOL_RESULT]
    response = anthropic_post(fake_llm, messages_body(messages))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    names = [e for e, _ in sse_events(response.text)]
    assert names == ["message_start", "ping", "content_block_start", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]
    assert fake_llm.last_request.rejected is None
    assert fake_llm.last_request.body["messages"] == messages


def test_anthropic_stream_events_for_thinking_and_tools(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(thinking="why", text="so", tool_calls=(ToolCall("ls", {"path": "."}, id="toolu_x"),),
                           usage={"input_tokens": 5, "output_tokens": 3}))
    response = anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}]))
    events = [json.loads(d) for _, d in sse_events(response.text)]
    deltas = [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"]
    assert deltas[:2] == ["thinking_delta", "signature_delta"]
    assert "text_delta" in deltas and "input_json_delta" in deltas
    args = "".join(e["delta"]["partial_json"] for e in events
                   if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta")
    assert json.loads(args) == {"path": "."}
    assert events[0]["message"]["usage"]["input_tokens"] == 5
    final = next(e for e in events if e["type"] == "message_delta")
    assert final["delta"]["stop_reason"] == "tool_use" and final["usage"]["output_tokens"] == 3


def test_anthropic_non_stream_json(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("ls", {"path": "."}, text="listing"))
    response = anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}], stream=False))
    body = response.json()
    assert body["type"] == "message" and body["stop_reason"] == "tool_use"
    assert [b["type"] for b in body["content"]] == ["text", "tool_use"]


@pytest.mark.parametrize(("status", "etype"), [(400, "invalid_request_error"), (401, "authentication_error"),
                                               (404, "not_found_error"), (429, "rate_limit_error"),
                                               (500, "api_error"), (529, "overloaded_error")])
def test_anthropic_error_shapes(fake_llm: FakeLLMServer, status: int, etype: str) -> None:
    fake_llm.enqueue(Reply.error(status, retry_after=5 if status == 429 else None))
    response = anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}]))
    assert response.status_code == status
    assert response.json()["type"] == "error" and response.json()["error"]["type"] == etype
    assert (response.headers.get("retry-after") == "5") is (status == 429)


# --- OpenAI strictness ---------------------------------------------------------------------


CALLS = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
    {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}


@pytest.mark.parametrize(("messages", "needle"), [
    ([{"role": "user", "content": "hi"}, CALLS, {"role": "tool", "tool_call_id": "call_1", "content": "x"},
      {"role": "user", "content": "next"}],
     "did not have response messages: call_2"),
    ([{"role": "user", "content": "hi"}, CALLS], "did not have response messages: call_1, call_2"),
    ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_9", "content": "x"}],
     "must be a response to a preceding message with 'tool_calls'"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}], "when there are no tool_calls"),
    ([], "empty array"),
])
def test_openai_rejects_invalid_transcripts(fake_llm: FakeLLMServer, messages: list[dict[str, Any]],
                                            needle: str) -> None:
    response = openai_post(fake_llm, {"model": "gpt-4o", "messages": messages, "stream": True})
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and needle in error["message"]


def test_openai_needs_a_key(fake_llm: FakeLLMServer) -> None:
    response = openai_post(fake_llm, {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}, headers={})
    assert response.status_code == 401


def test_openai_stream_with_usage_chunk_and_done(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tools(ToolCall("ls", {"path": "src"}), ToolCall("ls", {"path": "tests"}), chunk_size=3),
                     Reply.text("plain"))
    messages = [{"role": "user", "content": "hi"}]
    response = openai_post(fake_llm, {"model": "gpt-4o", "messages": messages, "stream": True,
                                      "stream_options": {"include_usage": True}})
    datas = [d for _, d in sse_events(response.text)]
    assert datas[-1] == "[DONE]"
    chunks = [json.loads(d) for d in datas[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] > 0
    args: dict[int, str] = {}
    for chunk in chunks[:-1]:
        for call in chunk["choices"][0]["delta"].get("tool_calls", []):
            args[call["index"]] = args.get(call["index"], "") + call["function"].get("arguments", "")
    assert {i: json.loads(a) for i, a in args.items()} == {0: {"path": "src"}, 1: {"path": "tests"}}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"

    plain = openai_post(fake_llm, {"model": "gpt-4o", "messages": messages, "stream": True})
    assert all(json.loads(d).get("usage") is None for _, d in sse_events(plain.text)[:-1])


def test_openai_error_shape_for_404(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.error(404))
    response = openai_post(fake_llm, {"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found" and "gpt-9" in response.json()["error"]["message"]


# --- scripting and recording ---------------------------------------------------------------


def test_empty_queue_answers_500_naming_the_problem(fake_llm: FakeLLMServer) -> None:
    response = anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}]))
    assert response.status_code == 500
    assert "no reply queued for request #1" in response.json()["error"]["message"]
    assert len(fake_llm.requests) == 1


def test_raw_body_is_served_byte_for_byte(fake_llm: FakeLLMServer) -> None:
    raw = b"event: ping\ndata: {\"type\": \"ping\"}\n\nevent: custom\r\ndata: \xc3\xa9\r\n\r\n"
    fake_llm.enqueue(Reply.raw(raw, chunk_size=5))
    response = anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}]))
    assert response.content == raw


def test_requests_are_recorded(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("a"), Reply.text("b"))
    anthropic_post(fake_llm, messages_body([{"role": "user", "content": "first"}]))
    openai_post(fake_llm, {"model": "gpt-4o", "messages": [{"role": "user", "content": "second"}]})
    first, second = fake_llm.requests
    assert (first.index, first.api, first.path) == (1, "anthropic", "/v1/messages")
    assert (second.index, second.api, second.path) == (2, "openai", "/v1/chat/completions")
    assert second.messages == [{"role": "user", "content": "second"}]
    assert json.loads(second.raw) == second.body and second.headers["authorization"] == "Bearer k"


def test_broken_stream_cuts_the_connection(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.broken("abcdef", after=3))
    with pytest.raises(httpx.RemoteProtocolError):
        anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}]))


def test_held_reply_waits_for_release(fake_llm: FakeLLMServer) -> None:
    reply, gate = Reply.text("released").held()
    fake_llm.enqueue(reply)
    result: list[httpx.Response] = []
    worker = threading.Thread(target=lambda: result.append(
        anthropic_post(fake_llm, messages_body([{"role": "user", "content": "hi"}]))))
    worker.start()
    assert fake_llm.wait_for_requests(1, timeout=10)
    assert not result
    gate.set()
    worker.join(timeout=10)
    assert result and "released" in result[0].text


def test_stop_does_not_hang_on_a_held_reply() -> None:
    server = FakeLLMServer().start()
    reply, _gate = Reply.text("never").held()
    server.enqueue(reply)
    errors: list[Exception] = []

    def call() -> None:
        try:
            anthropic_post(server, messages_body([{"role": "user", "content": "hi"}]))
        except httpx.HTTPError as exc:
            errors.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    assert server.wait_for_requests(1, timeout=10)
    server.stop()
    worker.join(timeout=10)
    assert not worker.is_alive() and errors


def test_env_points_subprocesses_at_the_server(fake_llm: FakeLLMServer) -> None:
    env = fake_llm.env("openai")
    assert env["OPENAI_BASE_URL"] == fake_llm.openai_base_url and env["OPENAI_API_KEY"]
    assert fake_llm.env()["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{fake_llm.port}"



def test_a_responder_answers_by_what_each_request_says(fake_llm: FakeLLMServer) -> None:
    def answer(who: str) -> str:
        reply = anthropic_post(fake_llm, messages_body([{"role": "user", "content": who}]))
        deltas = [json.loads(data)["delta"] for _, data in sse_events(reply.text) if "text_delta" in data]
        return "".join(delta["text"] for delta in deltas)

    fake_llm.enqueue(Reply(text="from the queue"))
    fake_llm.respond_with(lambda request: Reply(text=f"for {request.messages[0]['content']}"))
    assert [answer("bee"), answer("ant")] == ["for bee", "for ant"]
    fake_llm.respond_with(None)  # the queue again, untouched meanwhile
    assert answer("cat") == "from the queue"
