"""Token usage as reported by providers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    # The part of ``output_tokens`` the model spent reasoning (OpenAI reports it; billed
    # as output, so never added to it again).
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def prompt_tokens(self) -> int:
        """Everything the model read for this request, cached or not."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(**{k: int(data.get(k) or 0) for k in cls.__dataclass_fields__})
