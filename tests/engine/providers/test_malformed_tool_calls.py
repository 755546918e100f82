"""A tool call whose arguments are not valid JSON, and a server that cannot parse a request.

A call cut off by the length limit (``toolcall-truncated-json.sse``, recorded from
llama-server) is answered with an error result on the turn it arrives; what must not
happen is that the broken text goes back to the server in every later request: llama-server
refuses those with 500 "Failed to parse tool call arguments as JSON", for good. Such a
refusal is not retried - the same request fails the same way - and is said in one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loom_engine.execution import CancelToken
from loom_engine.messages import Message, ToolResultPart, ToolUsePart
from loom_engine.providers.base import Provider, ProviderError, StreamCompleted
from loom_engine.providers.retry import RetryPolicy, stream_with_retries
from loom_engine.providers.sdk_stream import unreadable_request
from loom_engine.sessions.store import SessionStore
from tests.conformance import conformance_dir, require
from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall
from tests.engine.providers.helpers import collect, make_request

RECORDING = conformance_dir("llama-server", "toolcall-truncated-json.sse")
# The arguments as the recording streams them: the closing brace never came.
CUT_OFF = '{\n        "path": "path_to_file.txt"'
FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.01, jitter=0.0)
KINDS = ["anthropic", "openai"]
MODEL = {"anthropic": "claude-haiku-4-5", "openai": "smollm2-135m"}
# llama-server's answer to a request holding such arguments, byte for byte.
PARSE_FAILURE = json.dumps({"error": {
    "code": 500, "type": "server_error",
    "message": "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at "
               "line 2, column 36: syntax error while parsing object - unexpected end of input; expected '}'"}})


def cut_off_turn(call: ToolUsePart) -> tuple[Message, ...]:
    """The history after the cut-off call was answered with its error."""
    return (Message.user("read the file"), Message.assistant(call),
            Message("user", (ToolResultPart(call.id, "invalid JSON arguments", is_error=True),)))


def sent_arguments(kind: str, body: Any) -> list[Any]:
    """The arguments of every tool call the request carried, parsed (raises when one is
    not valid JSON, as llama-server does)."""
    found: list[Any] = []
    for message in body["messages"]:
        if kind == "openai":
            found += [json.loads(c["function"]["arguments"]) for c in message.get("tool_calls") or []]
        elif isinstance(message["content"], list):
            found += [json.loads(json.dumps(b["input"])) for b in message["content"] if b["type"] == "tool_use"]
    return found


async def test_llama_servers_cut_off_call_goes_back_as_a_valid_object(
        fake_llm: FakeLLMServer, make: Callable[[str], Provider]) -> None:
    require(RECORDING)
    provider = make("openai")
    fake_llm.enqueue(Reply.raw(RECORDING), Reply.text("I will try again."))
    _, first = await collect(provider, make_request(MODEL["openai"], Message.user("read the file")))
    (call,) = first.message.tool_uses
    assert call.raw_input == CUT_OFF and call.input == {}

    await collect(provider, make_request(MODEL["openai"], *cut_off_turn(call)))
    (arguments,) = sent_arguments("openai", fake_llm.last_request.body)
    assert arguments == {"_invalid_arguments": CUT_OFF}


async def test_an_anthropic_call_cut_off_goes_back_as_a_valid_object(
        fake_llm: FakeLLMServer, make: Callable[[str], Provider]) -> None:
    provider = make("anthropic")
    fake_llm.enqueue(Reply(tool_calls=(ToolCall("read_file", raw_arguments=CUT_OFF),), stop_reason="max_tokens"),
                     Reply.text("I will try again."))
    _, first = await collect(provider, make_request(MODEL["anthropic"], Message.user("read the file")))
    (call,) = first.message.tool_uses
    assert call.raw_input == CUT_OFF

    await collect(provider, make_request(MODEL["anthropic"], *cut_off_turn(call)))
    assert sent_arguments("anthropic", fake_llm.last_request.body) == [{"_invalid_arguments": CUT_OFF}]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_session_saved_with_broken_arguments_is_sent_repaired(
        kind: str, tmp_path: Path, fake_llm: FakeLLMServer, make: Callable[[str], Provider]) -> None:
    """``--continue`` on a session written before the fix: the broken text is on disk."""
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path, provider=kind, model=MODEL[kind])
    history = cut_off_turn(ToolUsePart("call_1", "read_file", {}, raw_input=CUT_OFF * 200))
    for message in history:
        writer.append_message(message)
    writer.close()
    session_id = store.list()[0][0].id
    loaded = store.load(session_id).messages
    assert loaded[1].tool_uses[0].raw_input == CUT_OFF * 200

    fake_llm.enqueue(Reply.text("carrying on"))
    _, done = await collect(make(kind), make_request(MODEL[kind], *loaded, Message.user("continue")))
    assert done.message.text == "carrying on"
    (arguments,) = sent_arguments(kind, fake_llm.last_request.body)
    kept = arguments["_invalid_arguments"]
    # What arrived, cut to a bounded length: the model has it whole in the tool result.
    assert kept.startswith(CUT_OFF) and kept.endswith("…") and len(kept) < len(CUT_OFF * 200)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_request_the_server_cannot_parse_is_not_retried(
        kind: str, fake_llm: FakeLLMServer, make: Callable[[str], Provider]) -> None:
    fake_llm.enqueue(*[Reply.raw(PARSE_FAILURE, content_type="application/json", status=500)] * 5)
    events: list[object] = []
    with pytest.raises(ProviderError) as info:
        async for event in stream_with_retries(make(kind), make_request(MODEL[kind], Message.user("hi")),
                                               FAST, CancelToken()):
            events.append(event)
    err = info.value
    assert events == [] and len(fake_llm.requests) == 1
    assert err.kind == "bad_request" and not err.retryable and err.status == 500
    assert "\n" not in err.message and "500 500" not in err.message
    assert "rejected the request (500" in err.message
    assert "Failed to parse tool call arguments as JSON" in err.message


async def test_a_plain_server_error_is_still_retried(fake_llm: FakeLLMServer,
                                                     make: Callable[[str], Provider]) -> None:
    body = json.dumps({"error": {"code": 500, "type": "server_error", "message": "slot unavailable"}})
    fake_llm.enqueue(Reply.raw(body, content_type="application/json", status=500), Reply.text("fine now"))
    events = [e async for e in stream_with_retries(make("openai"), make_request(MODEL["openai"], Message.user("hi")),
                                                   FAST, CancelToken())]
    assert isinstance(events[-1], StreamCompleted) and len(fake_llm.requests) == 2


async def test_a_status_code_in_the_error_body_is_not_said_twice(fake_llm: FakeLLMServer,
                                                                 make: Callable[[str], Provider]) -> None:
    body = json.dumps({"error": {"code": 500, "type": "server_error", "message": "slot unavailable"}})
    fake_llm.enqueue(Reply.raw(body, content_type="application/json", status=500))
    with pytest.raises(ProviderError) as info:
        async for _ in make("openai").stream(make_request(MODEL["openai"], Message.user("hi"))):
            pass
    assert info.value.kind == "server"
    assert info.value.message == (f"the server at {fake_llm.openai_base_url} server error "
                                  "(500: slot unavailable)")


@pytest.mark.parametrize(("detail", "unreadable"), [
    ("Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]", True),
    ("Failed to parse messages: Expected 'content'", True),
    ("There was an error parsing the body of your request as JSON.", True),
    # The model's own output that the server could not parse: sampling again may do.
    ("Failed to parse input at pos 12: <tool_call>", False),
    ("slot unavailable", False),
])
def test_which_errors_say_the_request_itself_cannot_be_parsed(detail: str, unreadable: bool) -> None:
    assert unreadable_request(detail) is unreadable
