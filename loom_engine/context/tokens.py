"""Token counting: tiktoken when its tables are already on disk, else an estimate."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..messages import Message

CHARS_PER_TOKEN = 3.6


class TokenCounter:
    def __init__(self, model: str = "") -> None:
        self.model = model

    def count_text(self, text: str) -> int:
        return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0

    def count_message(self, message: Message) -> int:
        return 4 + self.count_text(json.dumps(message.to_dict()["parts"], ensure_ascii=False))

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tools: Sequence[Any]) -> int:
        return sum(self.count_text(t.name + t.description + json.dumps(dict(t.input_schema))) for t in tools)
