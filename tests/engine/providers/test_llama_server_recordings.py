"""What a real llama-server said to Loom, replayed byte for byte (tests/fixtures/llama-server/).

The bodies were saved by ``scripts/real_server_check.py``'s proxy during a run against
llama.cpp's own server; the streams go through the real SDKs and providers via the fake
server, the window bodies through the window probe.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loom_engine.messages import Message
from loom_engine.providers.base import Provider, StreamCompleted, StreamStalled, StreamText, StreamTimeouts
from loom_engine.providers.server_window import WindowFact, probe_server
from loom_engine.usage import Usage
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.window_servers import Answer, WindowStub
from tests.engine.providers.helpers import collect, failure, make_request

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "llama-server"


def test_the_window_from_the_servers_props() -> None:
    # Started with -c 16384 or 8192, the server caps the slot at the model's trained 8192 and
    # says so here; that is the window, not the -c the user typed.
    with WindowStub({"GET /props": Answer(body=(RECORDED / "props.json").read_bytes())}) as stub:
        answer = probe_server(stub.root, "smollm2-135m")
    assert answer.fact == WindowFact(8192, f"llama.cpp (GET /props) at {stub.root}")


def test_the_window_from_the_servers_model_list_when_props_is_gone() -> None:
    # /v1/models carries both an Ollama-style "models" list and the OpenAI "data" list with meta.
    with WindowStub({"GET /v1/models": Answer(body=(RECORDED / "v1-models.json").read_bytes())}) as stub:
        answer = probe_server(stub.root, "smollm2-135m")
    assert answer.fact is not None and answer.fact.tokens == 8192
    assert "meta.n_ctx" in answer.fact.source


# --- streams --------------------------------------------------------------------------------------

def data_events(name: str) -> list[dict[str, Any]]:
    """The JSON of every ``data:`` line of a recording (read here independently of the SDKs)."""
    lines = (RECORDED / name).read_text().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


async def replay(provider: Provider, server: FakeLLMServer, name: str, model: str) -> tuple[str, StreamCompleted]:
    server.enqueue(Reply.raw(RECORDED / name))
    events, done = await collect(provider, make_request(model, Message.user("read README.md")))
    streamed = "".join(e.text for e in events if isinstance(e, StreamText))
    assert streamed == done.message.text
    return streamed, done


async def test_openai_answer_cut_at_max_tokens_after_keep_alives(
        fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    name = "openai-length-after-keepalives.sse"
    # llama-server's keep-alive while it reads the 6.8k-token prompt is a bare ":" line.
    assert (RECORDED / name).read_bytes().startswith(b":\n\n" * 7 + b"data: ")
    chunks = data_events(name)
    expected = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])

    text, done = await replay(make("openai"), fake_llm, name, "smollm2-135m")
    assert text == expected and text.startswith("# Example\n\nThis is a sample code")
    assert done.stop_reason == "max_tokens"
    assert done.message.tool_uses == ()
    assert done.usage == Usage(input_tokens=6776, output_tokens=300, cache_read_input_tokens=0)


async def test_anthropic_text_answer_with_the_prompt_read_from_the_servers_cache(
        fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    name = "anthropic-text-cached-prompt.sse"
    deltas = [e["delta"]["text"] for e in data_events(name) if e["type"] == "content_block_delta"]

    text, done = await replay(make("anthropic"), fake_llm, name, "smollm2-135m")
    assert text == "".join(deltas) == (
        "What are the steps to make a custom task list in Python using the `todo_write` function?")
    assert done.stop_reason == "end_turn"
    assert done.message.tool_uses == ()
    # The whole prompt but its last token came from the server's prompt cache (message_start),
    # the output count from message_delta.
    assert done.usage == Usage(input_tokens=1, output_tokens=24, cache_read_input_tokens=6775)


async def test_anthropic_answer_cut_at_max_tokens_after_keep_alives(
        fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    name = "anthropic-keepalives-cold-prompt.sse"
    # On its Anthropic endpoint too the keep-alive is a bare ":" line, and there is no ping event.
    raw = (RECORDED / name).read_bytes()
    assert raw.startswith(b":\n\n" * 15 + b"event: message_start\n") and b"ping" not in raw
    deltas = [e["delta"]["text"] for e in data_events(name) if e["type"] == "content_block_delta"]

    text, done = await replay(make("anthropic"), fake_llm, name, "smollm2-135m")
    assert text == "".join(deltas) and text.startswith("This is just one example.")
    assert done.stop_reason == "max_tokens"
    assert done.usage == Usage(input_tokens=6776, output_tokens=80)


@pytest.mark.parametrize(("kind", "name", "count"), [
    ("openai", "openai-length-after-keepalives.sse", 7),
    ("anthropic", "anthropic-keepalives-cold-prompt.sse", 15),
])
async def test_the_real_keep_alives_are_counted_when_the_answer_never_comes(
        kind: str, name: str, count: int, fake_llm: FakeLLMServer, make: Callable[..., Provider]) -> None:
    # The recording's own keep-alive bytes (3 each), then silence: the stall names them.
    fake_llm.enqueue(Reply.raw(RECORDED / name, chunk_size=3, stall_after=count))
    _, err = await failure(make(kind, StreamTimeouts(first_event_s=1.0, idle_s=30.0)),
                           make_request("smollm2-135m", Message.user("read README.md")))
    assert isinstance(err, StreamStalled) and not err.partial_output
    assert f"sent {count} keep-alives but no answer, then nothing at all for 1 s" in err.message
