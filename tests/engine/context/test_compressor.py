from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from loom_engine.context.compressor import (
    StructuredCompressor,
    elide_tool_outputs,
    sections_present,
    split_point,
)
from loom_engine.context.prompts import COMPACTION_SECTIONS, COMPACTION_SYSTEM
from loom_engine.context.tokens import TokenCounter
from loom_engine.context.validity import transcript_problems
from loom_engine.execution import Cancelled, CancelToken
from loom_engine.messages import Message, TextPart, ToolResultPart, ToolUsePart
from loom_engine.providers.base import ProviderRequest
from loom_engine.providers.scripted import ScriptedProvider

GOOD_SUMMARY = "\n\n".join(f"## {name}\nFacts about {name.lower()}: src/app.py was changed."
                           for name in COMPACTION_SECTIONS)


def counter() -> TokenCounter:
    return TokenCounter(allow_tiktoken=False)


def bulky(n: int, label: str) -> str:
    return "\n".join(f"{i:>5}\t{label} line {i}: value = compute({i}) + offset" for i in range(1, n + 1))


def long_session(turns: int = 12, parallel: int = 3) -> list[Message]:
    """A realistic agentic session: prompts, parallel reads with bulky results, edits, answers."""
    messages: list[Message] = [Message.user("Refactor the payment module and keep the tests green.")]
    for t in range(turns):
        uses = [ToolUsePart(f"t{t}_{k}", "read_file", {"path": f"src/mod{t}_{k}.py"}) for k in range(parallel)]
        messages.append(Message.assistant(TextPart(f"Reading batch {t}."), *uses))
        messages.append(Message.tool_results([ToolResultPart(u.id, bulky(120, u.input["path"])) for u in uses]))
        edit = ToolUsePart(f"e{t}", "edit_file", {"path": f"src/mod{t}_0.py", "old_string": "a", "new_string": "b"})
        messages.append(Message.assistant(edit))
        messages.append(Message.tool_results([ToolResultPart(edit.id, "Edited src/mod.py (1 replacement).")]))
        messages.append(Message.assistant(TextPart(f"Step {t} done.")))
        if t % 4 == 3:
            messages.append(Message.user(f"Good. Now continue with part {t // 4 + 2}."))
    return messages


def requests_of(provider: ScriptedProvider) -> list[ProviderRequest]:
    assert provider.requests is not None
    return provider.requests


def kept_tail_is_unchanged(result: tuple[Message, ...], original: list[Message]) -> bool:
    tail = result[1:]
    return all(a is b for a, b in zip(tail, original[len(original) - len(tail):], strict=True))


# --- the summary -------------------------------------------------------------------------------------

async def test_summary_compaction_makes_a_smaller_valid_history() -> None:
    history = long_session()
    provider = ScriptedProvider([{"text": GOOD_SUMMARY}], record_requests=True)
    compressor = StructuredCompressor(provider, "test-model", counter())
    result = await compressor.compact(history, cancel=CancelToken())

    assert result.method == "summary" and result.error is None
    assert result.tokens_after < result.tokens_before / 3
    assert transcript_problems(result.messages) == []
    first = result.messages[0]
    assert first.role == "user" and first.meta.get("summary") is True
    assert "Summary of the earlier conversation" in first.text and GOOD_SUMMARY in first.text
    assert kept_tail_is_unchanged(result.messages, history)
    assert result.summary_text == GOOD_SUMMARY

    (request,) = requests_of(provider)
    assert request.system == COMPACTION_SYSTEM and request.tools == ()
    prompt = request.messages[0].text
    for name in COMPACTION_SECTIONS:
        assert f"## {name}" in prompt
    assert "Refactor the payment module" in prompt


async def test_old_bulky_outputs_are_elided_before_summarising() -> None:
    history = long_session()
    provider = ScriptedProvider([{"text": GOOD_SUMMARY}], record_requests=True)
    await StructuredCompressor(provider, "m", counter()).compact(history)
    prompt = requests_of(provider)[0].messages[0].text
    assert "[elided: 120 lines of read_file output for src/mod0_0.py]" in prompt
    assert "src/mod0_0.py line 77" not in prompt


async def test_focus_reaches_the_request() -> None:
    provider = ScriptedProvider([{"text": GOOD_SUMMARY}], record_requests=True)
    await StructuredCompressor(provider, "m", counter()).compact(long_session(), focus="the retry logic")
    assert "focus on: the retry logic" in requests_of(provider)[0].messages[0].text


async def test_the_latest_request_survives_verbatim_when_it_was_summarised() -> None:
    history = [Message.user("Please port the CLI to typer, keeping every flag.")]
    for t in range(10):
        use = ToolUsePart(f"t{t}", "bash", {"command": f"pytest -k case{t}"})
        history += [Message.assistant(use), Message.tool_results([ToolResultPart(use.id, bulky(80, "out"))])]
    provider = ScriptedProvider([{"text": GOOD_SUMMARY}])
    result = await StructuredCompressor(provider, "m", counter()).compact(history, keep_recent_tokens=500)
    assert result.method == "summary"
    assert "> Please port the CLI to typer, keeping every flag." in result.messages[0].text
    assert transcript_problems(result.messages) == []


async def test_every_split_point_keeps_parallel_calls_with_their_results() -> None:
    history = long_session(turns=5, parallel=4)
    c = counter()
    # One budget landing exactly on, and one just short of, every message position.
    suffixes = [c.count_messages(history[i:]) for i in range(len(history))]
    summaries = 0
    for keep in sorted({s + delta for s in suffixes for delta in (0, -1)} | {0}):
        provider = ScriptedProvider([{"text": GOOD_SUMMARY}])
        result = await StructuredCompressor(provider, "m", counter()).compact(history, keep_recent_tokens=keep)
        assert transcript_problems(result.messages) == [], keep
        assert result.tokens_after < result.tokens_before or result.method == "none"
        if result.method == "summary":
            summaries += 1
            kept = result.messages[1]
            assert not any(isinstance(p, ToolResultPart) for p in kept.parts)
    assert summaries > len(history) // 2


def test_split_point_never_starts_on_a_tool_result() -> None:
    history = long_session(turns=5, parallel=3)
    c = counter()
    for keep in range(0, c.count_messages(history), 50):
        index = split_point(history, c, keep)
        assert index is not None and index > 0
        assert not history[index].tool_results_parts
        assert not history[index - 1].tool_uses


# --- failures fall back ------------------------------------------------------------------------------

FAILURES = {
    "provider error": {"error": {"kind": "server", "message": "upstream exploded"}},
    "empty answer": {"text": ""},
    "cut off": {"text": GOOD_SUMMARY, "stop_reason": "max_tokens"},
    "not a summary": {"text": "Sure! I will keep refactoring the payment module now."},
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_failed_summary_falls_back_and_stays_valid(failure: str) -> None:
    history = long_session()
    provider = ScriptedProvider([FAILURES[failure]])
    result = await StructuredCompressor(provider, "m", counter()).compact(history)
    assert result.method in ("elide", "trim")
    assert result.error
    assert result.tokens_after < result.tokens_before
    assert transcript_problems(result.messages) == []


async def test_a_summary_longer_than_the_history_is_refused() -> None:
    history = [Message.user("hi"), Message.assistant(TextPart("hello")), Message.user("bye"),
               Message.assistant(TextPart("ok"))]
    provider = ScriptedProvider([{"text": GOOD_SUMMARY * 5}])
    result = await StructuredCompressor(provider, "m", counter()).compact(history, keep_recent_tokens=0)
    assert result.method != "summary"
    assert transcript_problems(result.messages) == []


async def test_a_summary_over_the_token_limit_is_refused() -> None:
    long_summary = "\n\n".join(f"## {name}\n" + "Many details. " * 60 for name in COMPACTION_SECTIONS)
    provider = ScriptedProvider([{"text": long_summary}])
    result = await StructuredCompressor(provider, "m", counter(), max_summary_tokens=200).compact(long_session())
    assert result.method in ("elide", "trim") and "too long" in (result.error or "")
    assert transcript_problems(result.messages) == []


async def test_a_crashing_provider_falls_back() -> None:
    class Broken:
        name = "broken"

        async def stream(self, request: ProviderRequest) -> AsyncIterator[object]:
            raise RuntimeError("bug in a provider")
            yield  # pragma: no cover

    result = await StructuredCompressor(Broken(), "m", counter()).compact(long_session())
    assert result.method in ("elide", "trim") and "bug in a provider" in (result.error or "")
    assert transcript_problems(result.messages) == []


async def test_eliding_alone_is_enough_when_outputs_were_bulky() -> None:
    provider = ScriptedProvider([{"error": {"kind": "overloaded", "message": "busy"}}])
    history = long_session()
    result = await StructuredCompressor(provider, "m", counter()).compact(history)
    assert result.method == "elide"
    assert len(result.messages) == len(history)
    assert any("[elided:" in r.content for m in result.messages for r in m.tool_results_parts)


async def test_trimming_drops_the_oldest_chunks_behind_a_note() -> None:
    history: list[Message] = []
    for t in range(30):
        history += [Message.user(f"Question {t}: " + "why is the sky blue? " * 20),
                    Message.assistant(TextPart(f"Answer {t}: " + "Rayleigh scattering. " * 20))]
    provider = ScriptedProvider([{"text": ""}])
    result = await StructuredCompressor(provider, "m", counter()).compact(history)
    assert result.method == "trim"
    assert result.messages[0].meta.get("trimmed") is True
    assert "could not be summarised" in result.messages[0].text
    assert result.messages[-1] is history[-1]
    assert result.tokens_after <= result.tokens_before // 2 + counter().count_message(result.messages[0])
    assert transcript_problems(result.messages) == []


async def test_an_invalid_input_comes_out_valid() -> None:
    history = long_session(turns=4)
    history.append(Message.assistant(ToolUsePart("dangling", "bash", {"command": "make"})))
    provider = ScriptedProvider([{"text": GOOD_SUMMARY}])
    result = await StructuredCompressor(provider, "m", counter()).compact(history)
    assert transcript_problems(result.messages) == []


async def test_nothing_to_compact_returns_the_history_unchanged() -> None:
    history = [Message.user("hello")]
    provider = ScriptedProvider([], record_requests=True)
    result = await StructuredCompressor(provider, "m", counter()).compact(history)
    assert result.method == "none" and result.messages == tuple(history)
    assert requests_of(provider) == []


async def test_cancellation_stops_the_summary_call() -> None:
    provider = ScriptedProvider([{"text": GOOD_SUMMARY, "delay": 30, "chunk_size": 5}])
    cancel = CancelToken()

    async def abort_soon() -> None:
        await asyncio.sleep(0.05)
        cancel.cancel("user pressed Esc")

    task = asyncio.create_task(abort_soon())
    with pytest.raises(Cancelled):
        await StructuredCompressor(provider, "m", counter()).compact(long_session(), cancel=cancel)
    await task


async def test_an_already_cancelled_token_raises_before_any_request() -> None:
    provider = ScriptedProvider([{"text": GOOD_SUMMARY}], record_requests=True)
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        await StructuredCompressor(provider, "m", counter()).compact(long_session(), cancel=cancel)
    assert requests_of(provider) == []


# --- helpers -------------------------------------------------------------------------------------------

def test_elision_notes_say_what_was_there() -> None:
    uses = [ToolUsePart("r", "read_file", {"path": "src/a.py"}),
            ToolUsePart("b", "bash", {"command": "pytest -q"}),
            ToolUsePart("w", "write_file", {"path": "big.txt", "content": "x\n" * 3000})]
    messages = [Message.user("go"), Message.assistant(*uses),
                Message.tool_results([ToolResultPart("r", bulky(1234, "a")),
                                      ToolResultPart("b", "E" * 5000, is_error=True),
                                      ToolResultPart("w", "Wrote big.txt")])]
    elided = elide_tool_outputs(messages, over_chars=2000)
    contents = [r.content for r in elided[2].tool_results_parts]
    assert contents[0] == "[elided: 1,234 lines of read_file output for src/a.py]"
    assert contents[1] == "[elided: 5,000 characters of bash error output for pytest -q]"
    assert contents[2] == "Wrote big.txt"
    assert elided[1].tool_uses[2].input["content"] == "[elided: 3,000 lines]"
    assert elided[0] is messages[0]
    assert transcript_problems(elided) == []


def test_sections_are_recognised_in_common_heading_styles() -> None:
    text = "## 1. Background context\n**Key decisions**\n### Tool usage:\nNext steps\nnone here"
    assert sections_present(text) == ["Background context", "Key decisions", "Tool usage", "Next steps"]
