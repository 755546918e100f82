"""Small pieces of wording the chat and `loom run` share."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 line``, ``2 lines``, ``20,000 lines``: the count and the noun that fits it."""
    word = noun if count == 1 else (many or noun + "s")
    return f"{count:,} {word}"
