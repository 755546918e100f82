"""Context windows and prices of the common Anthropic and OpenAI models.

Prices are USD per million tokens, as published by the vendors (standard tier, prompts
under any long-context surcharge threshold). Names match by the longest known prefix
that ends at a ``-`` boundary, so dated snapshots (``claude-sonnet-4-5-20250929``,
``gpt-4o-2024-08-06``) and ``-latest`` aliases find their family. Anything else gets
safe defaults: a 128k window, zero cost, ``known=False`` (the UI can say so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..usage import Usage


@dataclass(frozen=True)
class ModelInfo:
    name: str
    provider: str  # anthropic | openai | unknown
    context_window: int
    max_output_tokens: int
    input_price: float  # USD per million input tokens
    output_price: float
    cache_read_price: float = 0.0
    cache_write_price: float = 0.0
    known: bool = True


UNKNOWN_CONTEXT_WINDOW = 128_000
UNKNOWN_MAX_OUTPUT = 8_192


def _anthropic(name: str, window: int, max_out: int, price_in: float, price_out: float) -> ModelInfo:
    # Anthropic bills cache reads at 10% of input and 5-minute cache writes at 125%.
    return ModelInfo(name, "anthropic", window, max_out, price_in, price_out,
                     cache_read_price=round(price_in * 0.1, 6), cache_write_price=round(price_in * 1.25, 6))


def _openai(name: str, window: int, max_out: int, price_in: float, price_out: float,
            cached: float) -> ModelInfo:
    # OpenAI caches automatically: cached input is discounted, writes cost nothing extra.
    return ModelInfo(name, "openai", window, max_out, price_in, price_out, cache_read_price=cached)


_MODELS: tuple[ModelInfo, ...] = (
    # Anthropic - Claude 4.x (4.6 / 4.7 are priced like the 4.5 generation of their tier)
    _anthropic("claude-opus-4-7", 200_000, 64_000, 5.0, 25.0),
    _anthropic("claude-opus-4-6", 200_000, 64_000, 5.0, 25.0),
    _anthropic("claude-opus-4-5", 200_000, 64_000, 5.0, 25.0),
    _anthropic("claude-opus-4-1", 200_000, 32_000, 15.0, 75.0),
    _anthropic("claude-opus-4", 200_000, 32_000, 15.0, 75.0),
    _anthropic("claude-sonnet-4-6", 200_000, 64_000, 3.0, 15.0),
    _anthropic("claude-sonnet-4-5", 200_000, 64_000, 3.0, 15.0),
    _anthropic("claude-sonnet-4", 200_000, 64_000, 3.0, 15.0),
    _anthropic("claude-haiku-4-5", 200_000, 64_000, 1.0, 5.0),
    # Anthropic - Claude 3.x
    _anthropic("claude-3-7-sonnet", 200_000, 64_000, 3.0, 15.0),
    _anthropic("claude-3-5-sonnet", 200_000, 8_192, 3.0, 15.0),
    _anthropic("claude-3-5-haiku", 200_000, 8_192, 0.8, 4.0),
    _anthropic("claude-3-opus", 200_000, 4_096, 15.0, 75.0),
    _anthropic("claude-3-haiku", 200_000, 4_096, 0.25, 1.25),
    # OpenAI - GPT-4o / 4.1
    _openai("gpt-4o", 128_000, 16_384, 2.5, 10.0, 1.25),
    _openai("gpt-4o-mini", 128_000, 16_384, 0.15, 0.6, 0.075),
    _openai("gpt-4.1", 1_047_576, 32_768, 2.0, 8.0, 0.5),
    _openai("gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.1),
    _openai("gpt-4.1-nano", 1_047_576, 32_768, 0.1, 0.4, 0.025),
    # OpenAI - reasoning models
    _openai("o1", 200_000, 100_000, 15.0, 60.0, 7.5),
    _openai("o3", 200_000, 100_000, 2.0, 8.0, 0.5),
    _openai("o3-mini", 200_000, 100_000, 1.1, 4.4, 0.55),
    _openai("o3-pro", 200_000, 100_000, 20.0, 80.0, 0.0),
    _openai("o4-mini", 200_000, 100_000, 1.1, 4.4, 0.275),
    # OpenAI - GPT-5
    _openai("gpt-5", 400_000, 128_000, 1.25, 10.0, 0.125),
    _openai("gpt-5.1", 400_000, 128_000, 1.25, 10.0, 0.125),
    _openai("gpt-5-mini", 400_000, 128_000, 0.25, 2.0, 0.025),
    _openai("gpt-5-nano", 400_000, 128_000, 0.05, 0.4, 0.005),
)

_BY_NAME: dict[str, ModelInfo] = {m.name: m for m in _MODELS}

# Claude Code's short model names, as its sub-agent and command files write them
# (``model: haiku``); the one place they are mapped to the models above.
MODEL_ALIASES: Mapping[str, str] = {"sonnet": "claude-sonnet-4-6", "opus": "claude-opus-4-7",
                                    "haiku": "claude-haiku-4-5"}


def full_model_name(model: str) -> str:
    """The model a short name (``haiku``) stands for; any other name as written."""
    return MODEL_ALIASES.get(model, model)


def known_models() -> tuple[ModelInfo, ...]:
    return _MODELS


def lookup(model: str) -> ModelInfo:
    """The table entry for ``model`` (a dated or aliased name finds its family)."""
    name = model.strip().lower()
    # Routers such as OpenRouter prefix the vendor: "anthropic/claude-sonnet-4-5".
    name = name.rsplit("/", 1)[-1]
    best: ModelInfo | None = _BY_NAME.get(name)
    if best is None:
        for info in _MODELS:
            if name.startswith(info.name + "-") and (best is None or len(info.name) > len(best.name)):
                best = info
    if best is None:
        return ModelInfo(model, "unknown", UNKNOWN_CONTEXT_WINDOW, UNKNOWN_MAX_OUTPUT, 0.0, 0.0, known=False)
    return best


def cost_usd(model: str, usage: Usage) -> float:
    """What ``usage`` cost on ``model`` (0.0 for unknown models)."""
    info = lookup(model)
    total = (usage.input_tokens * info.input_price
             + usage.output_tokens * info.output_price
             + usage.cache_read_input_tokens * info.cache_read_price
             + usage.cache_creation_input_tokens * info.cache_write_price)
    return total / 1_000_000
