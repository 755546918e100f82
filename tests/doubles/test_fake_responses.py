"""The fake server's ``/v1/responses``: what it refuses (the real API's rules and Loom's
stateless contract) and the stream it sends (parsed by the real SDK in the provider
tests; here, its shape)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall

TOOLS = [{"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}}]
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


def post(server: FakeLLMServer, **body: Any) -> httpx.Response:
    sent = {"model": "gpt-5-codex", "stream": True, "store": False, "prompt_cache_key": "s1", "input": [USER],
            **body}
    sent = {k: v for k, v in sent.items() if v is not None}
    return httpx.post(f"{server.openai_base_url}/responses", json=sent, headers={"authorization": "Bearer k"},
                      timeout=10)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize(("body", "status", "said"), [
    ({"store": True}, 400, "store: false"),
    ({"store": None}, 400, "store: false"),
    ({"prompt_cache_key": None, "tools": TOOLS}, 400, "prompt_cache_key"),
    ({"reasoning": {"summary": "auto"}}, 400, "reasoning.encrypted_content"),
    ({"input": [USER, {"type": "function_call_output", "call_id": "call_x", "output": "1"}]}, 400,
     "No tool call found for function call output with call_id call_x"),
    ({"input": [USER, {"type": "function_call", "call_id": "call_y", "name": "read_file", "arguments": "{}"}]},
     400, "No tool output found for function call call_y"),
    ({"input": [USER, {"type": "reasoning", "id": "rs_1", "summary": []}]}, 404, "Items are not persisted"),
    ({"input": [USER, {"type": "reasoning", "encrypted_content": "gAAAA-forged", "summary": []}]}, 400,
     "could not be verified"),
    ({"input": [USER, {"type": "function_call", "call_id": "c", "name": "read_file", "arguments": "{broken"}]},
     400, "expected a JSON string"),
])
def test_refused(fake_llm: FakeLLMServer, body: dict[str, Any], status: int, said: str) -> None:
    answer = post(fake_llm, **body)
    assert answer.status_code == status
    assert said in answer.json()["error"]["message"]
    assert fake_llm.last_request.rejected is not None


def test_the_stream_and_a_replay_it_accepts(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply(thinking="Plan.", text="Reading.", tool_calls=(ToolCall("read_file", {"p": 1}, "c1"),),
                           usage={"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 4}),
                     Reply.text("ok"))
    first = post(fake_llm, tools=TOOLS, reasoning={"summary": "auto"}, include=["reasoning.encrypted_content"])
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/event-stream")
    seen = events(first)
    assert [e["sequence_number"] for e in seen] == list(range(len(seen)))
    assert seen[0]["type"] == "response.created" and seen[-1]["type"] == "response.completed"
    assert seen[-1]["response"]["usage"]["input_tokens"] == 14
    assert seen[-1]["response"]["usage"]["input_tokens_details"] == {"cached_tokens": 4}
    done = [e["item"] for e in seen if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "message", "function_call"]
    added = next(e["item"] for e in seen if e["type"] == "response.output_item.added")
    assert added["encrypted_content"] != done[0]["encrypted_content"]  # as the real API: the done one counts

    replay = {k: v for k, v in done[0].items() if k != "id"}
    call = {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"p\": 1}"}
    second = post(fake_llm, tools=TOOLS, reasoning={"summary": "auto"}, include=["reasoning.encrypted_content"],
                  input=[USER, replay, call, {"type": "function_call_output", "call_id": "c1", "output": "x"}])
    assert second.status_code == 200, second.text
    assert fake_llm.last_request.rejected is None


def test_incomplete_and_failed(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("cut", stop_reason="max_tokens"), Reply(stream_error=("server_error", "boom")))
    last = events(post(fake_llm))[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    failed = events(post(fake_llm))
    assert [e["type"] for e in failed[-2:]] == ["error", "response.failed"]
    assert failed[-2]["error"]["message"] == "boom"
