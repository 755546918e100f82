from loom_engine.events import TextDelta, ToolFinished, UsageUpdated
from loom_engine.messages import ImagePart, Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.usage import Usage


def test_message_round_trip_is_lossless() -> None:
    message = Message("assistant", (
        ThinkingPart("hmm", signature="sig=="),
        TextPart("Let me look."),
        ToolUsePart("call_1", "read_file", {"path": "a.py", "offset": 3}),
        ImagePart("image/png", "aGVsbG8="),
    ), meta={"interrupted": True})
    again = Message.from_dict(message.to_dict())
    assert again == message
    results = Message.tool_results([ToolResultPart("call_1", "1\tx", is_error=True)])
    assert Message.from_dict(results.to_dict()) == results


def test_message_helpers() -> None:
    message = Message.assistant(TextPart("a"), ToolUsePart("1", "ls", {}), TextPart("b"))
    assert message.text == "ab"
    assert [c.id for c in message.tool_uses] == ["1"]


def test_unknown_part_type_is_a_clear_error() -> None:
    import pytest

    with pytest.raises(ValueError, match="unknown message part type: 'video'"):
        Message.from_dict({"role": "user", "parts": [{"type": "video"}]})


def test_events_carry_type_and_ids() -> None:
    event = TextDelta(text="hi", turn_id="t1", agent_id="a", parent_tool_use_id="call_9", depth=1)
    data = event.to_dict()
    assert data["type"] == "text_delta" and data["turn_id"] == "t1" and data["parent_tool_use_id"] == "call_9"
    usage = UsageUpdated(usage=Usage(1, 2), total=Usage(3, 4), cost_usd=0.1, total_cost_usd=0.2).to_dict()
    assert usage["usage"]["output_tokens"] == 2 and usage["type"] == "usage"
    finished = ToolFinished(call_id="c", name="bash", content="x", is_error=False, duration_ms=1.0,
                            display={"kind": "diff"}).to_dict()
    assert finished["display"] == {"kind": "diff"}
