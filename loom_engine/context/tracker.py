"""How full the context window is, before each request.

The provider's reported usage is the truth for the previous request; only what was
added since (new messages) is estimated with the TokenCounter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import Message
from ..usage import Usage


class ContextTracker:
    def __init__(self, counter: Any, *, system: str, tools: Sequence[Any]) -> None:
        self.counter = counter
        self._fixed = counter.count_text(system) + counter.count_tools(tools)
        self._reported: int | None = None  # prompt + output tokens of the last request
        self._messages_at_request = 0
        self._pending_count = 0
        self._cache: dict[str, int] = {}

    def before_request(self, messages: Sequence[Message]) -> None:
        self._pending_count = len(messages)

    def observe(self, usage: Usage) -> None:
        # The answer the model just gave is part of the next prompt.
        self._reported = usage.prompt_tokens + usage.output_tokens
        self._messages_at_request = self._pending_count + 1

    def reset_after_compaction(self) -> None:
        self._reported = None
        self._messages_at_request = 0

    def tokens_in_use(self, messages: Sequence[Message]) -> int:
        if self._reported is None or self._messages_at_request > len(messages) + 1:
            return self._fixed + sum(self._count(m) for m in messages)
        # Right after a response its message may not be in the history yet; the
        # reported figure already includes it.
        new = messages[self._messages_at_request:]
        return self._reported + sum(self._count(m) for m in new)

    def _count(self, message: Message) -> int:
        # Messages are immutable, so each one is counted once.
        cached = self._cache.get(message.id)
        if cached is None:
            cached = self._cache[message.id] = self.counter.count_message(message)
        return cached
