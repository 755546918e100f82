from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from loom_engine.context import tokens as tokens_module
from loom_engine.context.tokens import (
    IMAGE_TOKENS,
    ContextTracker,
    TokenCounter,
    encoding_for_model,
    estimate_tokens,
    tiktoken_cache_dir,
)
from loom_engine.messages import ImagePart, Message, TextPart, ToolResultPart, ToolUsePart
from loom_engine.tool_spec import ToolSpec
from loom_engine.usage import Usage

from .samples import CL100K_TOKENS, SAMPLES

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@pytest.fixture
def no_tiktoken_tables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """tiktoken's cache pointed at an empty folder, and any download attempt made fatal."""
    empty = tmp_path / "no-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken tried to fetch its table")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    return empty


# --- the estimate --------------------------------------------------------------------------------

def test_estimate_of_nothing_is_zero_and_of_something_at_least_one() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(".") == 1
    assert estimate_tokens("a") == 1


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_estimate_is_close_to_cl100k_on_each_kind_of_text(kind: str) -> None:
    real = CL100K_TOKENS[kind]
    assert abs(estimate_tokens(SAMPLES[kind]) / real - 1) < 0.2


def test_estimate_is_within_ten_percent_over_mixed_text() -> None:
    estimated = sum(estimate_tokens(text) for text in SAMPLES.values())
    real = sum(CL100K_TOKENS.values())
    assert abs(estimated / real - 1) < 0.1


def test_estimate_beats_a_flat_character_ratio() -> None:
    flat_error = sum(abs(len(t) / 4 / CL100K_TOKENS[k] - 1) for k, t in SAMPLES.items())
    our_error = sum(abs(estimate_tokens(t) / CL100K_TOKENS[k] - 1) for k, t in SAMPLES.items())
    assert our_error < flat_error


def test_estimate_grows_with_the_text() -> None:
    one = estimate_tokens(SAMPLES["python"])
    assert estimate_tokens(SAMPLES["python"] * 10) >= 9 * one


# --- tiktoken offline ------------------------------------------------------------------------------

def test_missing_tables_fall_back_to_the_estimate_without_fetching(no_tiktoken_tables: Path) -> None:
    for model in ("claude-sonnet-4-5", "gpt-4o", "llama3"):
        counter = TokenCounter(model)
        assert counter.backend == "estimate"
        assert counter.count_text(SAMPLES["prose"]) == estimate_tokens(SAMPLES["prose"])
    assert not no_tiktoken_tables.exists()


def test_a_corrupt_cached_table_is_neither_used_nor_replaced(no_tiktoken_tables: Path) -> None:
    no_tiktoken_tables.mkdir()
    cached = no_tiktoken_tables / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    cached.write_bytes(b"not a bpe table\n")
    counter = TokenCounter("claude-sonnet-4-5")
    assert counter.backend == "estimate"
    # tiktoken itself would have deleted it and tried to download a new one.
    assert cached.read_bytes() == b"not a bpe table\n"


def test_an_empty_cache_dir_setting_disables_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tiktoken_cache_dir() is None
    assert TokenCounter("gpt-4o").backend == "estimate"


def test_cache_dir_follows_tiktokens_own_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path))
    assert tiktoken_cache_dir() == str(tmp_path)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    assert tiktoken_cache_dir().endswith("data-gym-cache")


def test_tiktoken_can_be_refused() -> None:
    assert TokenCounter("gpt-4o", allow_tiktoken=False).backend == "estimate"


def test_encoding_choice_by_model() -> None:
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("openrouter/openai/gpt-5") == "o200k_base"
    assert encoding_for_model("o3-mini") == "o200k_base"
    assert encoding_for_model("claude-sonnet-4-5") == "cl100k_base"
    assert encoding_for_model("gpt-4-turbo") == "cl100k_base"


def _verified_cl100k_available() -> bool:
    folder = tiktoken_cache_dir()
    if folder is None:
        return False
    return tokens_module._cached_table_path(tokens_module._TABLES["cl100k_base"]) is not None


@pytest.mark.skipif(not _verified_cl100k_available(), reason="cl100k_base table not cached on this machine")
def test_a_verified_cached_table_gives_exact_counts() -> None:
    counter = TokenCounter("claude-sonnet-4-5")
    assert counter.backend == "tiktoken:cl100k_base"
    for kind, text in SAMPLES.items():
        assert counter.count_text(text) == CL100K_TOKENS[kind]


# --- messages and tools -----------------------------------------------------------------------------

def test_message_counts_cover_every_part() -> None:
    counter = TokenCounter(allow_tiktoken=False)
    text = Message.user(SAMPLES["prose"])
    assert counter.count_message(text) > estimate_tokens(SAMPLES["prose"])
    call = Message.assistant(ToolUsePart("t1", "read_file", {"path": "src/app/models/user.py"}))
    bigger_call = Message.assistant(ToolUsePart("t1", "write_file", {"path": "a.py", "content": SAMPLES["python"]}))
    assert counter.count_message(bigger_call) > counter.count_message(call) + 100
    result = Message.tool_results([ToolResultPart("t1", SAMPLES["shell"])])
    assert counter.count_message(result) >= CL100K_TOKENS["shell"] * 0.8
    image = Message("user", (ImagePart("image/png", "iVBORw0KGgo="),))
    assert counter.count_message(image) >= IMAGE_TOKENS
    assert counter.count_messages([text, call, result]) == sum(
        counter.count_message(m) for m in (text, call, result))


def test_message_count_cache_does_not_confuse_messages_sharing_an_id() -> None:
    counter = TokenCounter(allow_tiktoken=False)
    short = Message("user", (TextPart("hi"),), id="same")
    long = Message("user", (TextPart(SAMPLES["prose"]),), id="same")
    assert counter.count_message(short) < counter.count_message(long)
    assert counter.count_message(short) == counter.count_message(short)


def test_tools_are_counted_with_their_schemas() -> None:
    counter = TokenCounter(allow_tiktoken=False)
    small = ToolSpec("ls", "List a folder.", {"type": "object", "properties": {"path": {"type": "string"}}})
    large = ToolSpec("grep", "Search file contents. " * 20, {
        "type": "object",
        "properties": {f"option_{i}": {"type": "string", "description": "An option " * 5} for i in range(10)}})
    assert counter.count_tools([]) == 0
    assert counter.count_tools([small, large]) > counter.count_tools([small]) + 200


# --- the tracker -----------------------------------------------------------------------------------

def _tracker() -> ContextTracker:
    return ContextTracker(TokenCounter(allow_tiktoken=False), system="You are Loom.",
                          tools=[ToolSpec("ls", "List a folder.", {"type": "object"})])


def test_before_any_usage_everything_is_estimated() -> None:
    tracker = _tracker()
    messages = [Message.user("hello there")]
    expected = tracker.fixed_tokens + tracker.counter.count_messages(messages)
    assert tracker.tokens_in_use(messages) == expected


def test_reported_usage_is_the_truth_and_only_new_messages_are_estimated() -> None:
    tracker = _tracker()
    sent = [Message.user("read the readme")]
    tracker.before_request(sent)
    tracker.observe(Usage(input_tokens=100, output_tokens=20, cache_read_input_tokens=3000,
                          cache_creation_input_tokens=50))
    reply = Message.assistant(ToolUsePart("t1", "read_file", {"path": "README.md"}))
    assert tracker.tokens_in_use(sent) == 3170
    assert tracker.tokens_in_use([*sent, reply]) == 3170
    result = Message.tool_results([ToolResultPart("t1", SAMPLES["prose"])])
    new_part = tracker.counter.count_message(result)
    in_use = tracker.tokens_in_use([*sent, reply, result])
    assert in_use - 3170 == pytest.approx(new_part * tracker.scale, abs=1)
    assert tracker.fraction_used([*sent, reply, result], 10_000) == in_use / 10_000


def test_the_estimate_is_rescaled_to_the_providers_tokenizer() -> None:
    tracker = _tracker()
    sent = [Message.user(SAMPLES["python"])]
    estimate = tracker.tokens_in_use(sent)
    tracker.before_request(sent)
    tracker.observe(Usage(input_tokens=estimate * 2, output_tokens=10))
    assert tracker.scale == pytest.approx(2.0, rel=0.01)
    tracker.before_request(sent)
    tracker.observe(Usage(input_tokens=estimate * 100, output_tokens=10))
    assert tracker.scale == ContextTracker.MAX_SCALE


def test_a_replaced_history_is_estimated_again() -> None:
    tracker = _tracker()
    sent = [Message.user("one"), Message.assistant(TextPart("two")), Message.user("three")]
    tracker.before_request(sent)
    tracker.observe(Usage(input_tokens=50_000, output_tokens=10))
    compacted = [Message.user("summary"), Message.user("three")]
    assert tracker.tokens_in_use(compacted) < 1000
    tracker.reset_after_compaction()
    assert tracker.tokens_in_use(sent) < 1000


class _CountingCounter(TokenCounter):
    def __init__(self) -> None:
        super().__init__(allow_tiktoken=False)
        self.counted = 0

    def count_messages(self, messages):  # type: ignore[no-untyped-def]
        self.counted += len(messages)
        return super().count_messages(messages)


def test_a_growing_history_is_counted_once_per_message() -> None:
    # Without usage reports (a server that sends none) every turn estimates the whole
    # history; only the messages added since the last turn may be walked.
    counter = _CountingCounter()
    tracker = ContextTracker(counter, system="s")
    history: list[Message] = []
    for i in range(200):
        history += [Message.user(f"question {i}"), Message.assistant(TextPart(f"answer {i}"))]
        tracker.before_request(history)
        assert tracker.tokens_in_use(history) == tracker.fixed_tokens + TokenCounter(
            allow_tiktoken=False).count_messages(history)
    assert counter.counted == 400


def test_a_different_history_of_the_same_length_is_counted_afresh() -> None:
    tracker = _tracker()
    first = [Message.user("short"), Message.user("also short")]
    second = [Message.user("short"), Message.user(SAMPLES["prose"])]
    assert tracker.tokens_in_use(first) < tracker.tokens_in_use(second)
    assert tracker.tokens_in_use(first) == tracker.fixed_tokens + tracker.counter.count_messages(first)


def test_usage_without_numbers_is_ignored() -> None:
    tracker = _tracker()
    sent = [Message.user("hello")]
    before = tracker.tokens_in_use(sent)
    tracker.before_request(sent)
    tracker.observe(Usage())
    assert tracker.tokens_in_use(sent) == before
    assert tracker.last_usage is None


def test_a_failed_request_leaves_the_previous_anchor() -> None:
    tracker = _tracker()
    sent = [Message.user("hello")]
    tracker.before_request(sent)
    tracker.observe(Usage(input_tokens=900, output_tokens=100))
    reply = Message.assistant(TextPart("hi"))
    more = [*sent, reply, Message.user("next")]
    tracker.before_request(more)  # this request fails: no usage arrives
    assert tracker.tokens_in_use(more) >= 1000


def test_fraction_needs_a_window() -> None:
    with pytest.raises(ValueError):
        _tracker().fraction_used([Message.user("x")], 0)


def test_no_network_even_with_a_default_temp_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken tried to fetch its table")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    assert TokenCounter("gpt-4o").backend == "estimate"
    assert not (tmp_path / "data-gym-cache").exists()
    assert os.listdir(tmp_path) == []
