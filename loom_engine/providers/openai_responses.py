"""OpenAI's Responses API (``/v1/responses``): the request Loom sends.

Stateless, as Codex does it: ``store: false``, so OpenAI keeps nothing between requests,
and every request carries the whole conversation as input items. What the model must
see again that is not text - its reasoning - comes back as encrypted reasoning items
(``include: ["reasoning.encrypted_content"]``); :mod:`.openai_responses_stream` keeps
each one on the neutral message (``ThinkingPart.provider_data``) and this module replays
it verbatim, to the endpoint that issued it only. A session recorded over Chat
Completions or another provider has none: its messages, tool calls and results map to
plain items.

The server-side ``id`` of a replayed item is left out: with ``store: false`` it names
nothing OpenAI kept (an ``rs_...`` id can fail as "Item ... not found", and a
``fc_...`` id as "provided without its required reasoning item").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..messages import ImagePart, Message, Part, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from .base import ProviderError, ProviderRequest
from .names import ReasoningEffort, WireApi
from .sdk_stream import sendable_tool_input, tool_output_text

# The tag on what a part keeps for this wire (``provider_data["wire"]``).
WIRE = "openai-responses"
ENCRYPTED_REASONING = "reasoning.encrypted_content"

# Model families that reason (and so accept ``reasoning`` and return reasoning items);
# the ``-chat`` variants of GPT-5 do not.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "codex")
_NON_REASONING_MARKERS = ("-chat",)


def uses_responses(wire_api: WireApi, official: bool) -> bool:
    """Whether requests go over ``/v1/responses`` (else Chat Completions)."""
    return wire_api == "responses" or (wire_api == "auto" and official)


def reasons(model: str) -> bool:
    """Whether ``model`` is a reasoning model (by its family name)."""
    name = model.lower().rpartition("/")[2]
    return name.startswith(_REASONING_PREFIXES) and not any(m in name for m in _NON_REASONING_MARKERS)


def provider_data(endpoint: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """What a part keeps of ``item``, for replay to ``endpoint`` over this wire."""
    return {"wire": WIRE, "endpoint": endpoint, "item": dict(item)}


def _own_item(part: TextPart | ThinkingPart, endpoint: str) -> Mapping[str, Any] | None:
    """The item ``part`` kept from this wire and ``endpoint``; None for anything else
    (another wire's, another server's, or none): it is not sent."""
    data = part.provider_data
    if not data or data.get("wire") != WIRE or data.get("endpoint") != endpoint:
        return None
    item = data.get("item")
    return item if isinstance(item, Mapping) else None


# --- neutral messages -> input items -----------------------------------------------------


def _assistant_items(msg: Message, endpoint: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in msg.parts:
        if isinstance(part, ThinkingPart):
            kept = _own_item(part, endpoint)
            if kept is not None and kept.get("type") == "reasoning" and kept.get("encrypted_content"):
                # As received, but for the id (see above) and fields the server left null.
                items.append({k: v for k, v in kept.items() if k != "id" and v is not None})
            # Anthropic's signed thinking, another server's reasoning, plain thinking:
            # nothing this endpoint can take.
        elif isinstance(part, TextPart):
            if not part.text.strip():
                continue
            item: dict[str, Any] = {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": part.text, "annotations": []}]}
            kept = _own_item(part, endpoint)
            if kept is not None and kept.get("phase"):
                item["phase"] = kept["phase"]  # GPT-5.3-codex's commentary / final answer
            items.append(item)
        elif isinstance(part, ToolUsePart):
            items.append({"type": "function_call", "call_id": part.id, "name": part.name,
                          "arguments": json.dumps(sendable_tool_input(part))})
    return items


def _user_content(parts: Sequence[Part]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart) and part.text.strip():
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "input_image", "detail": "auto",
                            "image_url": f"data:{part.media_type};base64,{part.data}"})
    return content


def to_input_items(messages: Sequence[Message], endpoint: str) -> list[dict[str, Any]]:
    """The conversation as Responses input items, for a request to ``endpoint``."""
    items: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            items.extend(_assistant_items(msg, endpoint))
            continue
        # Tool outputs follow their calls, before any text of the same message.
        for part in msg.parts:
            if isinstance(part, ToolResultPart):
                items.append({"type": "function_call_output", "call_id": part.tool_use_id,
                              "output": tool_output_text(part)})
        content = _user_content([p for p in msg.parts if isinstance(p, (TextPart, ImagePart))])
        if content:
            # Notes the engine adds mid-conversation (role "system") go as user text, as on
            # the chat wire: the conversation reads the same over either.
            items.append({"type": "message", "role": "user", "content": content})
    return items


def build_params(request: ProviderRequest, *, endpoint: str, effort: ReasoningEffort | None) -> dict[str, Any]:
    """Keyword arguments for ``client.responses.create`` (streaming)."""
    params: dict[str, Any] = {
        "model": request.model,
        "input": to_input_items(request.messages, endpoint),
        "store": False,
        "stream": True,
        "max_output_tokens": request.max_tokens,
    }
    if request.system.strip():
        params["instructions"] = request.system
    if request.cache_key:
        params["prompt_cache_key"] = request.cache_key
    if request.tools:
        params["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                            "parameters": dict(t.input_schema), "strict": False} for t in request.tools]
        params["tool_choice"] = "auto"
        params["parallel_tool_calls"] = True
    if reasons(request.model) or effort is not None:
        reasoning: dict[str, Any] = {"summary": "auto"}
        if effort is not None:
            reasoning["effort"] = effort
        params["reasoning"] = reasoning
        params["include"] = [ENCRYPTED_REASONING]
    elif request.temperature is not None:
        # Reasoning models accept no temperature.
        params["temperature"] = request.temperature
    return params


def input_item_error(error: ProviderError | None) -> ProviderError | None:
    """``error``, unless it is OpenAI's 404 for an input item it does not keep ("Item with
    id 'rs_...' not found"): not a missing model, as a 404 otherwise is, but a request
    that will fail the same way again - said so."""
    if error is None or error.kind != "not_found" or "Items are not persisted" not in error.message:
        return error
    detail = error.message.partition("(")[2].rstrip(")")
    return ProviderError("bad_request", f"OpenAI refused an input item it does not keep ({detail})",
                         status=error.status, partial_output=error.partial_output)
