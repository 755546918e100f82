from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loom_engine.context.validity import repair_transcript, transcript_problems
from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.transcript import interrupted_result_text


def call(*ids: str, text: str = "") -> Message:
    parts = ([TextPart(text)] if text else []) + [ToolUsePart(i, "read_file", {"path": f"{i}.py"}) for i in ids]
    return Message("assistant", tuple(parts))


def results(*ids: str) -> Message:
    return Message.tool_results([ToolResultPart(i, f"content of {i}") for i in ids])


def valid_history() -> list[Message]:
    return [
        Message.user("look at a and b"),
        call("a", "b", text="Reading both."),
        results("a", "b"),
        Message.assistant(TextPart("Done.")),
        Message.user("thanks"),
    ]


def test_a_valid_transcript_has_no_problems_and_is_left_alone() -> None:
    history = valid_history()
    assert transcript_problems(history) == []
    assert transcript_problems([]) == []
    repaired = repair_transcript(history)
    assert all(a is b for a, b in zip(repaired, history, strict=True))


def test_each_rule_is_reported() -> None:
    cases = {
        "start with a user message": [Message.assistant(TextPart("hi"))],
        "empty text part": [Message("user", (TextPart("  \n"),))],
        "no content": [Message("user", ())],
        "has no tool result": [Message.user("go"), call("a", "b"), results("a")],
        "did not call": [Message.user("go"), call("a"), results("a", "zz")],
        "2 times": [Message.user("go"), call("a"), Message.tool_results(
            [ToolResultPart("a", "x"), ToolResultPart("a", "y")])],
        "reuses the tool call id": [Message.user("go"), call("a"), results("a"), call("a"), results("a")],
        "only assistant messages may": [Message("user", (ToolUsePart("a", "ls", {}),))],
    }
    for expected, messages in cases.items():
        problems = transcript_problems(messages)
        assert any(expected in p for p in problems), (expected, problems)


def test_results_must_be_in_the_very_next_message() -> None:
    messages = [Message.user("go"), call("a"), Message.user("wait"), results("a")]
    problems = transcript_problems(messages)
    assert any("has no tool result" in p for p in problems)
    assert any("did not call" in p for p in problems)


def test_repair_answers_unanswered_calls_in_call_order() -> None:
    messages = [Message.user("go"), call("a", "b", "c"), results("b")]
    repaired = repair_transcript(messages)
    assert transcript_problems(repaired) == []
    answer = repaired[2].tool_results_parts
    assert [r.tool_use_id for r in answer] == ["a", "b", "c"]
    assert answer[1].content == "content of b" and not answer[1].is_error
    assert answer[0].is_error and answer[0].content == "Interrupted by user: the tool did not run or did not finish."


def test_repair_closes_a_dangling_call_at_the_end() -> None:
    repaired = repair_transcript([Message.user("go"), call("a")])
    assert transcript_problems(repaired) == []
    assert repaired[-1].tool_results_parts[0].content == interrupted_result_text()


def test_repair_inserts_results_before_a_following_user_message() -> None:
    repaired = repair_transcript([Message.user("go"), call("a"), Message.user("stop")])
    assert [m.role for m in repaired] == ["user", "assistant", "tool", "user"]
    assert transcript_problems(repaired) == []


def test_repair_drops_orphans_duplicates_and_empty_text() -> None:
    messages = [
        Message("user", (TextPart("go"), TextPart(""))),
        results("ghost"),
        Message.assistant(TextPart(" ")),
        call("a"),
        Message.tool_results([ToolResultPart("a", "first"), ToolResultPart("a", "second"),
                              ToolResultPart("zz", "orphan")]),
    ]
    repaired = repair_transcript(messages)
    assert transcript_problems(repaired) == []
    assert len(repaired) == 3
    assert repaired[0].parts == (TextPart("go"),)
    assert [r.content for r in repaired[2].tool_results_parts] == ["first"]


def test_repair_gives_a_user_message_first() -> None:
    repaired = repair_transcript([Message.assistant(TextPart("hello"))])
    assert repaired[0].role == "user" and transcript_problems(repaired) == []


def test_repair_renames_a_reused_call_id_with_its_result() -> None:
    messages = [Message.user("go"), call("a"), results("a"), call("a"), results("a")]
    repaired = repair_transcript(messages)
    assert transcript_problems(repaired) == []
    new_id = repaired[3].tool_uses[0].id
    assert new_id != "a" and repaired[4].tool_results_parts[0].tool_use_id == new_id
    assert repaired[4].tool_results_parts[0].content == "content of a"


def test_repair_note_is_used_in_the_synthetic_results() -> None:
    repaired = repair_transcript([Message.user("go"), call("a")], note="the session was cut off")
    assert repaired[-1].tool_results_parts[0].content.startswith("The session was cut off:")


# --- any input comes out valid ---------------------------------------------------------------------

_IDS = st.sampled_from(["a", "b", "c"])
_TEXT = st.sampled_from(["", " ", "hello", "more text"])


@st.composite
def _part(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    kind = draw(st.sampled_from(["text", "use", "result", "thinking"]))
    if kind == "text":
        return TextPart(draw(_TEXT))
    if kind == "use":
        return ToolUsePart(draw(_IDS), "ls", {"path": "."})
    if kind == "result":
        return ToolResultPart(draw(_IDS), draw(_TEXT), is_error=draw(st.booleans()))
    return ThinkingPart("hmm", signature="sig")


_MESSAGE = st.builds(lambda role, parts: Message(role, tuple(parts)),
                     st.sampled_from(["user", "assistant", "tool"]), st.lists(_part(), max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGE, max_size=8))
def test_repair_always_yields_a_valid_transcript_and_is_idempotent(messages: list[Message]) -> None:
    repaired = repair_transcript(messages)
    assert transcript_problems(repaired) == []
    again = repair_transcript(repaired)
    assert all(a is b for a, b in zip(again, repaired, strict=True))


def test_tool_results_must_come_before_other_content() -> None:
    mixed = Message("user", (TextPart("also, hurry"), ToolResultPart("a", "done")))
    messages = [Message.user("go"), call("a"), mixed]
    assert any("before its tool results" in p for p in transcript_problems(messages))
    repaired = repair_transcript(messages)
    assert transcript_problems(repaired) == []
    assert [type(p).__name__ for p in repaired[2].parts] == ["ToolResultPart", "TextPart"]
