"""The scripted provider: replays turns from a list, a JSON file or a generator function."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from loom_engine.messages import Message, TextPart, ThinkingPart
from loom_engine.providers.base import (
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    StreamCompleted,
    StreamText,
    StreamThinking,
    StreamToolUseStart,
)
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.usage import Usage


def req(text: str = "go") -> ProviderRequest:
    return ProviderRequest(model="scripted", system="", messages=(Message.user(text),))


async def run(provider: ScriptedProvider, request: ProviderRequest | None = None) -> list[ProviderEvent]:
    return [e async for e in provider.stream(request or req())]


async def test_turns_replay_in_order_with_chunked_text_and_tool_calls() -> None:
    provider = ScriptedProvider([
        {"text": "Let me look at the readme file now.",
         "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}},
                        {"name": "bash", "input": {"command": "ls"}, "id": "my-id"}]},
        {"thinking": "It is a demo.", "signature": "sig", "text": "A demo project.",
         "usage": {"input_tokens": 10, "output_tokens": 4}},
    ], chunk_size=8)
    first = await run(provider)
    texts = [e.text for e in first if isinstance(e, StreamText)]
    assert len(texts) == 5 and "".join(texts) == "Let me look at the readme file now."
    starts = [(e.id, e.name) for e in first if isinstance(e, StreamToolUseStart)]
    assert starts == [("toolu_scripted_1_1", "read_file"), ("my-id", "bash")]
    done = first[-1]
    assert isinstance(done, StreamCompleted) and done.stop_reason == "tool_use"
    assert [dict(t.input) for t in done.message.tool_uses] == [{"path": "README.md"}, {"command": "ls"}]

    second = await run(provider)
    assert [type(e) for e in second[:1]] == [StreamThinking]
    done = second[-1]
    assert isinstance(done, StreamCompleted)
    assert done.message.parts == (ThinkingPart("It is a demo.", signature="sig"), TextPart("A demo project."))
    assert done.stop_reason == "end_turn" and done.usage == Usage(10, 4)
    assert provider.calls == 2


async def test_script_running_out_is_a_clear_config_error() -> None:
    provider = ScriptedProvider([{"text": "only one"}])
    await run(provider)
    with pytest.raises(ProviderError) as info:
        await run(provider)
    assert info.value.kind == "config"
    assert "no turn 2" in info.value.message and "it has 1" in info.value.message


async def test_json_file_and_turns_object(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"text": "from a file"}]))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"turns": [{"text": "wrapped"}]}))
    for path, expected in ((plain, "from a file"), (wrapped, "wrapped")):
        events = await run(ScriptedProvider(str(path)))
        assert isinstance(events[-1], StreamCompleted) and events[-1].message.text == expected


@pytest.mark.parametrize(("content", "needle"), [
    ("{not json", "not valid JSON"),
    ('{"text": "x"}', "list of turns"),
    ('[{"txet": "typo"}]', "unknown keys: txet"),
    ('[{"tool_calls": [{"input": {}}]}]', "'name'"),
    ('[{"error": {"kind": "nonsense"}}]', "'kind'"),
])
def test_malformed_scripts_are_refused_with_the_reason(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ProviderError) as info:
        ScriptedProvider(path)
    assert info.value.kind == "config" and needle in info.value.message
    assert "\n" not in info.value.message


def test_missing_script_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        ScriptedProvider(tmp_path / "nope.json")
    assert info.value.kind == "config" and "nope.json" in info.value.message


async def test_error_turns_raise_the_given_kind() -> None:
    provider = ScriptedProvider([
        {"error": {"kind": "rate_limit", "message": "slow down", "retry_after": 2}},
        {"text": "partial", "error": {"kind": "stream_broken", "message": "cut"}},
    ])
    with pytest.raises(ProviderError) as info:
        await run(provider)
    assert (info.value.kind, info.value.message, info.value.retry_after) == ("rate_limit", "slow down", 2.0)
    assert info.value.partial_output is False
    events: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as info:
        async for event in provider.stream(req()):
            events.append(event)
    assert events == [StreamText("partial")]
    assert info.value.kind == "stream_broken" and info.value.partial_output is True


async def test_every_error_kind_a_provider_raises_can_be_scripted() -> None:
    # The script's check reads the one list of kinds, request_too_large included.
    provider = ScriptedProvider([{"error": {"kind": "request_too_large", "message": "413 from a proxy"}}])
    with pytest.raises(ProviderError) as info:
        await run(provider)
    assert (info.value.kind, info.value.message, info.value.retryable) == \
        ("request_too_large", "413 from a proxy", False)


async def test_a_scripted_usage_limit_says_when_it_resets() -> None:
    provider = ScriptedProvider([{"error": {"kind": "usage_limit", "message": "5-hour limit", "resets_in": 90}}])
    before = time.time()
    with pytest.raises(ProviderError) as info:
        await run(provider)
    assert info.value.kind == "usage_limit" and not info.value.retryable
    assert info.value.resets_at is not None and before + 90 <= info.value.resets_at <= time.time() + 90
    with pytest.raises(ProviderError, match="'resets_in' must be a number of seconds"):
        ScriptedProvider([{"error": {"kind": "usage_limit", "resets_in": "soon"}}])


async def test_unparsable_tool_input_is_kept_raw() -> None:
    provider = ScriptedProvider([{"tool_calls": [{"name": "edit_file", "input": "{\"path\": "},
                                                 {"name": "ls", "input": "{\"path\": \".\"}"}]}])
    done = (await run(provider))[-1]
    assert isinstance(done, StreamCompleted)
    broken, fine = done.message.tool_uses
    assert broken.input == {} and broken.raw_input == '{"path": '
    assert fine.input == {"path": "."} and fine.raw_input is None


async def test_callable_script_generates_a_thousand_turns() -> None:
    def turn(request: ProviderRequest, index: int) -> dict[str, object] | None:
        if index >= 1000:
            return None
        return {"text": f"turn {index}", "tool_calls": [{"name": "noop", "input": {"i": index}}]}

    provider = ScriptedProvider(turn)
    for index in range(1000):
        done = (await run(provider, req(str(index))))[-1]
        assert isinstance(done, StreamCompleted)
        assert done.message.tool_uses[0].input == {"i": index}
    assert provider.calls == 1000
    assert provider.last_request is not None and provider.last_request.messages[0].text == "999"
    with pytest.raises(ProviderError) as info:
        await run(provider)
    assert info.value.kind == "config" and "ended after 1000 turns" in info.value.message


async def test_requests_are_recorded_on_demand() -> None:
    provider = ScriptedProvider([{"text": "a"}, {"text": "b"}], record_requests=True)
    await run(provider, req("one"))
    await run(provider, req("two"))
    assert provider.requests is not None
    assert [r.messages[0].text for r in provider.requests] == ["one", "two"]
    assert provider.last_request is not None and provider.last_request.messages[0].text == "two"
    assert ScriptedProvider([{"text": "a"}]).requests is None
