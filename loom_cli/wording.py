"""Small pieces of wording the chat and `loom run` share."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 line``, ``2 lines``, ``20,000 lines``: the count and the noun that fits it."""
    word = noun if count == 1 else (many or noun + "s")
    return f"{count:,} {word}"


# How the context was made smaller, by the compressor's method name.
_COMPACTION_METHODS = {
    "summary": "summarised the earlier conversation",
    "elide": "shortened old tool outputs",
    "trim": "dropped the oldest messages",
}
_COMPACTION_REASONS = {"auto": " automatically", "context_length": " (the request was too long for the model)"}


# Said after a compaction whose summarised part had facts worth keeping (SessionPromoter).
HELD_PROPOSALS_NOTICE = "memory: facts worth keeping from before the compaction will be offered when the session ends"


def compaction_notice(reason: str, method: str, tokens_before: int, tokens_after: int) -> str:
    """One line: the context was compacted, how, and how much smaller it is."""
    how = _COMPACTION_METHODS.get(method, "made the conversation shorter")
    return (f"context compacted{_COMPACTION_REASONS.get(reason, '')}: {how} · "
            f"{tokens_before:,} → {tokens_after:,} tokens")


def conversation_length(prompts: int) -> str:
    """How long a conversation is, in the one word the chat uses for it everywhere (/clear,
    /resume, the resumed notice): ``1 prompt``, ``3 prompts`` (``messages.prompt_count``)."""
    return plural(prompts, "prompt")
