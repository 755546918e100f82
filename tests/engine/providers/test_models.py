"""The model table: prefix lookup, safe defaults, cost."""

from __future__ import annotations

import pytest

from loom_engine.providers.models import UNKNOWN_CONTEXT_WINDOW, cost_usd, known_models, lookup
from loom_engine.usage import Usage


@pytest.mark.parametrize(("name", "family", "provider"), [
    ("claude-sonnet-4-5", "claude-sonnet-4-5", "anthropic"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "anthropic"),
    ("claude-opus-4-1-20250805", "claude-opus-4-1", "anthropic"),
    ("claude-opus-4-20250514", "claude-opus-4", "anthropic"),
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5", "anthropic"),
    ("claude-3-7-sonnet-latest", "claude-3-7-sonnet", "anthropic"),
    ("claude-3-5-haiku-20241022", "claude-3-5-haiku", "anthropic"),
    ("gpt-4o-2024-08-06", "gpt-4o", "openai"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini", "openai"),
    ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano", "openai"),
    ("o3-mini-2025-01-31", "o3-mini", "openai"),
    ("o3-2025-04-16", "o3", "openai"),
    ("o4-mini", "o4-mini", "openai"),
    ("gpt-5-mini-2025-08-07", "gpt-5-mini", "openai"),
    ("openai/gpt-5", "gpt-5", "openai"),
    ("Claude-Sonnet-4-6", "claude-sonnet-4-6", "anthropic"),
])
def test_lookup_finds_the_longest_family(name: str, family: str, provider: str) -> None:
    info = lookup(name)
    assert info.name == family and info.provider == provider and info.known


@pytest.mark.parametrize("name", ["llama3.2", "qwen2.5-coder:7b", "gpt-4o3", "claude-sonnet-9", "o", ""])
def test_unknown_models_get_safe_defaults(name: str) -> None:
    info = lookup(name)
    assert not info.known and info.provider == "unknown"
    assert info.context_window == UNKNOWN_CONTEXT_WINDOW == 128_000
    assert info.input_price == info.output_price == 0.0
    assert cost_usd(name, Usage(1_000_000, 1_000_000, 5, 5)) == 0.0


def test_table_is_sane() -> None:
    for info in known_models():
        assert info.context_window >= 128_000 and 0 < info.max_output_tokens <= info.context_window
        assert info.output_price >= info.input_price > 0
        assert info.cache_read_price < info.input_price


def test_anthropic_cost_counts_cache_reads_and_writes() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_input_tokens=2_000_000,
                  cache_creation_input_tokens=400_000)
    # $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens
    assert cost_usd("claude-sonnet-4-5-20250929", usage) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)


def test_openai_cost_discounts_cached_input() -> None:
    usage = Usage(input_tokens=400_000, output_tokens=50_000, cache_read_input_tokens=600_000)
    # gpt-4o: $2.50 in, $10 out, $1.25 cached
    assert cost_usd("gpt-4o", usage) == pytest.approx(1.0 + 0.5 + 0.75)
