"""The words for retries and final errors: plain, no internal codes, with what to do."""

from __future__ import annotations

from loom_cli.stop_reason import cut_off, retry_status, stop_reason
from loom_engine.events import Error, Finished, Retrying


def test_retry_line_names_the_cause_the_wait_and_the_attempt() -> None:
    event = Retrying(attempt=1, delay_s=4.0, reason="x (stream_broken)", kind="stream_broken", max_attempts=5)
    assert retry_status(event, 3.2) == "↻ connection dropped — retrying in 4s (attempt 2 of 5)"
    assert retry_status(event, 0.0) == "↻ connection dropped — retrying now (attempt 2 of 5)"


def test_final_errors_carry_no_codes_and_no_stale_retry_advice() -> None:
    overloaded = stop_reason(Error(message="Anthropic is overloaded (529 overloaded_error: Overloaded) (overloaded)",
                                   kind="overloaded"), attempts=5)
    assert "overloaded_error" not in overloaded and "(overloaded)" not in overloaded
    assert "tried 5 times" in overloaded and "try again in a few minutes" in overloaded
    limited = stop_reason(Error(message="rate limited by Anthropic (429 rate_limit_error: slow down); "
                                        "retry after 2s", kind="rate_limit"))
    assert limited == "rate limited by Anthropic (429: slow down) — wait a minute, then send your message again"


def test_prompt_too_long_suggests_compact() -> None:
    text = stop_reason(Error(message="the conversation is too long for model 'm' (prompt is too long)",
                             kind="context_length"))
    assert "/compact" in text


def test_compaction_is_worded_without_the_compressor_s_terms() -> None:
    from loom_cli.wording import compaction_notice

    text = compaction_notice("auto", "elide", 180_000, 90_000)
    assert text == "context compacted automatically: shortened old tool outputs · 180,000 → 90,000 tokens"
    assert "elide" not in compaction_notice("manual", "elide", 10, 5)


def test_headless_overflow_advice_names_no_chat_command() -> None:
    error = Error(message="the conversation is too long for model 'm' (prompt is too long)", kind="context_length")
    text = stop_reason(error, headless=True)
    assert "/compact" not in text and "/clear" not in text
    assert text.endswith("start a new session (without --continue or --resume) or send a shorter prompt")


def test_a_cut_off_answer_names_the_limit_when_it_is_known() -> None:
    known = Finished(result="half", num_turns=1, stop_reason="max_tokens", max_output_tokens=8192)
    assert known.cut_off and cut_off(known) == ("the answer was cut off at the output limit "
                                                "(8,192 tokens, max_tokens in config.toml)")
    unknown = Finished(result="half", num_turns=1, stop_reason="max_tokens")
    assert cut_off(unknown) == "the answer was cut off at the output limit (max_tokens in config.toml)"
    assert not Finished(result="all", num_turns=1).cut_off


def test_a_cut_off_answer_blames_the_window_when_it_lowered_the_limit() -> None:
    lowered = Finished(result="half", num_turns=1, stop_reason="max_tokens", max_output_tokens=1500,
                       output_limited_by_window=True)
    assert cut_off(lowered) == ("the answer was cut off at the output limit "
                                "(1,500 tokens, all the context window had room for)")
