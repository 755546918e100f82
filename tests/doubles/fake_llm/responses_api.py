"""OpenAI's Responses API (``POST /v1/responses``) in the fake server: a :class:`Reply`
rendered as the real event stream, and requests validated as the real API does, plus
what Loom promises on this wire (stateless: ``store: false``, a ``prompt_cache_key``,
reasoning replayed with its encrypted content).

The stream is the real one (as in ``../shared/conformance/sse/openai_responses/``):
``response.created``, ``response.in_progress``, per output item
``response.output_item.added`` / deltas / ``response.output_item.done``, then
``response.completed`` with usage, ``response.incomplete`` (``max_output_tokens``) for
a reply cut at the length limit, or ``error`` + ``response.failed``.

Reasoning items carry an ``encrypted_content`` the server issues; a later request may
replay only a value it issued, byte for byte ("could not be verified" otherwise), as the
real API decrypts it. The values of recorded bodies served as they are count as issued.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from .rendering import _pieces, _sse, _usage_for
from .scenario import Reply

ENCRYPTED_REASONING = "reasoning.encrypted_content"
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_INCOMPLETE = {"max_tokens": "max_output_tokens", "refusal": "content_filter"}


def encrypted_for(serial: int, summary: str) -> str:
    """The opaque reasoning the fake issues for request ``serial`` (unique per request)."""
    return "gAAAAAfake" + base64.urlsafe_b64encode(f"{serial}:{summary}".encode()).decode()


def issued_in(raw_body: bytes) -> list[str]:
    """The encrypted reasoning a recorded stream hands out (its ``output_item.done`` items)."""
    found: list[str] = []
    for line in raw_body.decode(errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        try:
            data = json.loads(line[5:])
        except ValueError:
            continue
        item = data.get("item") if isinstance(data, dict) and data.get("type") == "response.output_item.done" else None
        if isinstance(item, dict) and isinstance(item.get("encrypted_content"), str):
            found.append(item["encrypted_content"])
    return found


class ResponsesRenderer:
    """One Reply as a Responses event stream, for request ``serial``."""

    def __init__(self, reply: Reply, body: Mapping[str, Any], raw: bytes, serial: int) -> None:
        self.reply = reply
        self.body = body
        self.serial = serial
        self.usage = _usage_for(reply, raw)
        self.model = reply.model or str(body.get("model") or "fake-model")
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.issued: list[str] = []  # encrypted reasoning handed out

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return _sse(kind, data)

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {"id": f"resp_fake{self.serial:06d}", "object": "response", "created_at": int(time.time()),
                "status": status, "background": False, "error": None, "incomplete_details": None,
                "instructions": self.body.get("instructions"), "max_output_tokens": self.body.get("max_output_tokens"),
                "model": self.model, "output": list(self.output), "parallel_tool_calls": True,
                "previous_response_id": None, "prompt_cache_key": self.body.get("prompt_cache_key"),
                "reasoning": self.body.get("reasoning") or {"effort": None, "summary": None},
                "store": self.body.get("store", True), "temperature": 1.0, "tool_choice": "auto", "tools": [],
                "top_p": 1.0, "truncation": "disabled", "usage": None, "metadata": {}, **fields}

    def _usage(self) -> dict[str, Any]:
        u = self.usage
        prompt = u.input + u.cache_read + u.cache_write
        reasoning = len(self.reply.thinking) // 4
        return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": u.cache_read},
                "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": prompt + u.output}

    def events(self) -> Iterator[bytes]:
        r = self.reply
        yield self._event("response.created", response=self._response("in_progress"))
        yield self._event("response.in_progress", response=self._response("in_progress"))
        if r.thinking:
            yield from self._reasoning(len(self.output), r.thinking)
        if r.text:
            yield from self._message(len(self.output), r.text)
        for k, call in enumerate(r.tool_calls):
            yield from self._function_call(len(self.output), k, call.name, call.arguments(), call.id)
        if r.stream_error:
            kind, message = r.stream_error
            error = {"type": kind, "code": kind, "message": message, "param": None}
            yield self._event("error", error=error)
            yield self._event("response.failed", response=self._response(
                "failed", error={"code": kind, "message": message}))
            return
        if r.stop_reason in _INCOMPLETE:
            yield self._event("response.incomplete", response=self._response(
                "incomplete", incomplete_details={"reason": _INCOMPLETE[r.stop_reason]}, usage=self._usage()))
            return
        yield self._event("response.completed", response=self._response("completed", usage=self._usage()))

    def _reasoning(self, index: int, summary: str) -> Iterator[bytes]:
        item_id = f"rs_fake{self.serial:06d}{index:02d}"
        # As the real API: the added event's encrypted content is not the final one.
        yield self._event("response.output_item.added", output_index=index, item={
            "id": item_id, "type": "reasoning", "encrypted_content": encrypted_for(-self.serial, ""),
            "summary": []})
        part = {"type": "summary_text", "text": ""}
        yield self._event("response.reasoning_summary_part.added", item_id=item_id, output_index=index,
                          summary_index=0, part=part)
        for piece in _pieces(summary, self.reply.chunk_size):
            yield self._event("response.reasoning_summary_text.delta", item_id=item_id, output_index=index,
                              summary_index=0, delta=piece, obfuscation="fake")
        yield self._event("response.reasoning_summary_text.done", item_id=item_id, output_index=index,
                          summary_index=0, text=summary)
        yield self._event("response.reasoning_summary_part.done", item_id=item_id, output_index=index,
                          summary_index=0, part={"type": "summary_text", "text": summary})
        encrypted = encrypted_for(self.serial * 100 + index, summary)
        self.issued.append(encrypted)
        item = {"id": item_id, "type": "reasoning", "encrypted_content": encrypted,
                "summary": [{"type": "summary_text", "text": summary}]}
        self.output.append(item)
        yield self._event("response.output_item.done", output_index=index, item=item)

    def _message(self, index: int, text: str) -> Iterator[bytes]:
        item_id = f"msg_fake{self.serial:06d}{index:02d}"
        yield self._event("response.output_item.added", output_index=index, item={
            "id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"})
        yield self._event("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
                          part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""})
        for piece in _pieces(text, self.reply.chunk_size):
            yield self._event("response.output_text.delta", item_id=item_id, output_index=index, content_index=0,
                              delta=piece, logprobs=[], obfuscation="fake")
        yield self._event("response.output_text.done", item_id=item_id, output_index=index, content_index=0,
                          text=text, logprobs=[])
        content = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        yield self._event("response.content_part.done", item_id=item_id, output_index=index, content_index=0,
                          part=content)
        status = "incomplete" if self.reply.stop_reason == "max_tokens" else "completed"
        item = {"id": item_id, "type": "message", "status": status, "content": [content], "role": "assistant"}
        self.output.append(item)
        yield self._event("response.output_item.done", output_index=index, item=item)

    def _function_call(self, index: int, k: int, name: str, arguments: str, call_id: str | None) -> Iterator[bytes]:
        item_id = f"fc_fake{self.serial:06d}{index:02d}"
        call = call_id or f"call_fake{self.serial:04d}{k:02d}"
        yield self._event("response.output_item.added", output_index=index, item={
            "id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": call, "name": name})
        for piece in _pieces(arguments, max(self.reply.chunk_size, 1)):
            yield self._event("response.function_call_arguments.delta", item_id=item_id, output_index=index,
                              delta=piece, obfuscation="fake")
        yield self._event("response.function_call_arguments.done", item_id=item_id, output_index=index,
                          arguments=arguments)
        item = {"id": item_id, "type": "function_call", "status": "completed", "arguments": arguments,
                "call_id": call, "name": name}
        self.output.append(item)
        yield self._event("response.output_item.done", output_index=index, item=item)


# --- validation ---------------------------------------------------------------------------

Rejection = tuple[int, str, str | None]  # status, message, param


def _not_kept(item_id: str) -> Rejection:
    return (404, f"Item with id '{item_id}' not found. Items are not persisted when `store` is set to false. "
                 "Try again with `store` set to true, or remove this item from your input.", "input")


def validate_responses(body: Any, issued: set[str]) -> Rejection | None:
    """The first reason the real Responses API (or Loom's stateless contract) refuses
    ``body``, or None. ``issued``: the encrypted reasoning this server handed out."""
    if not isinstance(body, dict):
        return 400, "request body must be a JSON object", None
    if not isinstance(body.get("model"), str) or not body["model"]:
        return 400, "Missing required parameter: 'model'.", "model"
    if body.get("store") is not False:
        return 400, "fake LLM server: Loom speaks the Responses API statelessly; send store: false", "store"
    key = body.get("prompt_cache_key")
    # An agent's turns (requests with tools) stay on their session's cache; a one-off
    # request (a compaction summary) may go without.
    if (key is not None or body.get("tools")) and (not isinstance(key, str) or not key):
        return 400, "fake LLM server: an agent's request carries its session's prompt_cache_key", "prompt_cache_key"
    if body.get("reasoning") is not None and ENCRYPTED_REASONING not in (body.get("include") or ()):
        return (400, f"fake LLM server: with store false, reasoning needs include [{ENCRYPTED_REASONING!r}] "
                     "to be replayed", "include")
    if body.get("reasoning") is not None and body.get("temperature") is not None:
        return 400, "Unsupported parameter: 'temperature' is not supported with this model.", "temperature"
    limit = body.get("max_output_tokens")
    if limit is not None and (not isinstance(limit, int) or limit < 16):
        return (400, "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, "
                     f"but got {limit} instead.", "max_output_tokens")
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        return 400, "Invalid type for 'instructions': expected a string.", "instructions"
    for j, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return 400, f"Invalid value for 'tools[{j}].type'.", f"tools[{j}].type"
        if not _TOOL_NAME.match(str(tool.get("name", ""))):
            return 400, f"Invalid 'tools[{j}].name': string does not match pattern.", f"tools[{j}].name"
        params = tool.get("parameters")
        if not isinstance(params, dict) or params.get("type") != "object":
            return 400, f"Invalid schema for function '{tool.get('name')}'.", f"tools[{j}].parameters"
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list) or not items:
        return 400, "Missing required parameter: 'input'.", "input"
    return _validate_items(items, issued)


def _validate_items(items: list[Any], issued: set[str]) -> Rejection | None:
    calls: list[str] = []
    answered: set[str] = set()
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            return 400, f"Invalid type for '{where}': expected an object.", where
        kind = item.get("type", "message")
        if isinstance(item.get("id"), str) and kind != "message":
            return _not_kept(item["id"])  # store false: nothing is kept to refer to
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                return 400, f"Invalid value: '{role}'. Supported values are: 'user', 'assistant', ...", where
            content = item.get("content")
            if isinstance(content, str):
                continue
            if not isinstance(content, list) or not content:
                return 400, f"Invalid '{where}.content': expected a non-empty array.", f"{where}.content"
            allowed = ("output_text", "refusal") if role == "assistant" else ("input_text", "input_image", "input_file")
            for k, part in enumerate(content):
                if not isinstance(part, dict) or part.get("type") not in allowed:
                    got = part.get("type") if isinstance(part, dict) else part
                    return (400, f"Invalid value: '{got}'. Supported values are: {', '.join(allowed)}.",
                            f"{where}.content[{k}]")
        elif kind == "reasoning":
            encrypted = item.get("encrypted_content")
            if not isinstance(encrypted, str) or not encrypted:
                return 400, f"Missing required parameter: '{where}.encrypted_content' (store is false).", where
            if encrypted not in issued:
                return (400, f"The encrypted content for item {where} could not be verified.",
                        f"{where}.encrypted_content")
            if not isinstance(item.get("summary"), list):
                return 400, f"Missing required parameter: '{where}.summary'.", f"{where}.summary"
        elif kind == "function_call":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id or not isinstance(item.get("name"), str):
                return 400, f"Missing required parameter: '{where}.call_id'.", where
            arguments = item.get("arguments")
            try:
                json.loads(arguments if isinstance(arguments, str) else "")
            except ValueError:
                return 400, f"Invalid '{where}.arguments': expected a JSON string.", f"{where}.arguments"
            calls.append(call_id)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                return 400, f"No tool call found for function call output with call_id {call_id}.", where
            if not isinstance(item.get("output"), (str, list)):
                return 400, f"Invalid type for '{where}.output': expected a string.", f"{where}.output"
            answered.add(str(call_id))
        elif kind == "item_reference":
            return _not_kept(str(item.get("id")))
        else:
            return 400, f"Invalid value: '{kind}'.", f"{where}.type"
    for call_id in calls:
        if call_id not in answered:
            return 400, f"No tool output found for function call {call_id}.", "input"
    return None
