"""Provider-neutral conversation messages.

Messages are immutable values. Conversion to a provider's wire format happens only in
the provider adapters; everything else in the engine speaks this shape.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

Role = Literal["user", "assistant", "tool", "system"]

# What a part carries for one provider wire only: ``{"wire": ..., "endpoint": ...,
# "item": {...}}``, the item as that wire sent it. The wire that wrote it replays it to
# the same endpoint; every other wire and provider leaves it out of its requests.
ProviderData = Mapping[str, Any]


@dataclass(frozen=True)
class TextPart:
    text: str
    # What one provider wire needs back besides the text, kept as that wire sent it
    # (see :data:`ProviderData`); every other wire ignores it.
    provider_data: ProviderData | None = None
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ThinkingPart:
    thinking: str
    # Anthropic signs thinking blocks; they must be sent back byte-identical.
    signature: str | None = None
    # Redacted thinking carries opaque data instead of text.
    redacted_data: str | None = None
    # OpenAI's Responses API: the reasoning item (with its encrypted content), which goes
    # back verbatim on that wire only (see :data:`ProviderData`).
    provider_data: ProviderData | None = None
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolUsePart:
    id: str
    name: str
    input: Mapping[str, Any]
    # Arguments exactly as the model streamed them, kept when they were not valid JSON
    # so the pipeline can tell the model what was wrong.
    raw_input: str | None = None
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True)
class ToolResultPart:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class ImagePart:
    media_type: str
    data: str  # base64
    type: Literal["image"] = "image"


Part = TextPart | ThinkingPart | ToolUsePart | ToolResultPart | ImagePart

_PART_TYPES: dict[str, type[Part]] = {
    "text": TextPart,
    "thinking": ThinkingPart,
    "tool_use": ToolUsePart,
    "tool_result": ToolResultPart,
    "image": ImagePart,
}


def part_to_dict(part: Part) -> dict[str, Any]:
    data: dict[str, Any] = {"type": part.type}
    for name in part.__dataclass_fields__:
        if name == "type":
            continue
        value = getattr(part, name)
        if name == "provider_data" and value is None:
            continue  # most parts have none; sessions stay as they were
        if isinstance(value, Mapping):
            value = dict(value)
        data[name] = value
    return data


def part_from_dict(data: Mapping[str, Any]) -> Part:
    kind = data.get("type")
    cls = _PART_TYPES.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown message part type: {kind!r}")
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k != "type" and k in known}
    return cls(**values)


# --- lone surrogates -------------------------------------------------------------------
#
# JSON may spell half of a UTF-16 pair ("\ud83d"); Python decodes it to a lone surrogate,
# a str no UTF-8 encoder accepts. One in the transcript would fail the session write and
# every later request body, so whatever enters the transcript is scrubbed: each lone
# surrogate becomes U+FFFD. (Paired surrogates never reach a str: json joins them.)

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def scrub_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD."""
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def scrub_value(value: Any) -> Any:
    """A JSON-like value (str, list, dict, ...) with lone surrogates scrubbed in every
    string, keys included; anything else is returned as it is."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, Mapping):
        return {scrub_text(k) if isinstance(k, str) else k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_value(v) for v in value]
    return value


def _scrub_part(part: Part) -> Part:
    changes: dict[str, Any] = {}
    for item in fields(part):
        if item.name == "type":
            continue
        value = getattr(part, item.name)
        clean = scrub_value(value) if isinstance(value, (str, Mapping)) else value
        if clean != value:
            changes[item.name] = clean
    return replace(part, **changes) if changes else part


def scrub_message(message: Message) -> Message:
    """``message`` with no lone surrogate in any part or annotation (the same object
    when there was none)."""
    parts = tuple(_scrub_part(p) for p in message.parts)
    meta = scrub_value(message.meta) if message.meta else message.meta
    if all(a is b for a, b in zip(parts, message.parts, strict=False)) and meta == message.meta:
        return message
    return replace(message, parts=parts, meta=meta)


def new_message_id() -> str:
    return "msg_" + uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    id: str = field(default_factory=new_message_id)
    # Free-form annotations (e.g. {"interrupted": True}, {"summary": True}); never sent
    # to a provider.
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def user(cls, text: str, **meta: Any) -> Message:
        return cls("user", (TextPart(text),), meta=meta)

    @classmethod
    def assistant(cls, *parts: Part, **meta: Any) -> Message:
        return cls("assistant", tuple(parts), meta=meta)

    @classmethod
    def tool_results(cls, results: list[ToolResultPart] | tuple[ToolResultPart, ...], **meta: Any) -> Message:
        return cls("tool", tuple(results), meta=meta)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_uses(self) -> tuple[ToolUsePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolUsePart))

    @property
    def tool_results_parts(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "parts": [part_to_dict(p) for p in self.parts],
        }
        if self.meta:
            data["meta"] = dict(self.meta)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        role = data.get("role")
        if role not in ("user", "assistant", "tool", "system"):
            raise ValueError(f"unknown message role: {role!r}")
        parts = tuple(part_from_dict(p) for p in data.get("parts", ()))
        return cls(role=role, parts=parts, id=str(data.get("id") or new_message_id()),
                   meta=dict(data.get("meta") or {}))


def is_prompt(message: Message) -> bool:
    """A prompt the user typed (not a reminder, summary, interruption note or ``!command``)."""
    return message.role == "user" and (not message.meta or "prompt" in message.meta)


def prompt_count(messages: Iterable[Message]) -> int:
    """How long a conversation is, as the chat words it everywhere (/clear, /resume, the
    resumed notice, ``loom sessions``): the prompts the user sent in it."""
    return sum(1 for message in messages if is_prompt(message))
