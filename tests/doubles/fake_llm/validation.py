"""Strict request validation, as the real Anthropic and OpenAI APIs do it (their 400 answers)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _count_cache_control(body: Mapping[str, Any]) -> int:
    count = 0
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for b in system if isinstance(b, dict) and b.get("cache_control"))
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("cache_control"):
            count += 1
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and isinstance(msg.get("content"), list):
            count += sum(1 for b in msg["content"] if isinstance(b, dict) and b.get("cache_control"))
    return count


def validate_anthropic(body: Any) -> str | None:
    """The first reason the real Messages API would answer 400, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Field required"
    system = body.get("system")
    if system is not None:
        if isinstance(system, list):
            for j, block in enumerate(system):
                if not isinstance(block, dict) or block.get("type") != "text":
                    return f"system.{j}: Input tag does not match expected 'text'"
                if not str(block.get("text", "")).strip():
                    return f"system.{j}.text: text content blocks must contain non-whitespace text"
        elif not isinstance(system, str):
            return "system: Input should be a valid string or list"
    for j, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not _TOOL_NAME.match(str(tool.get("name", ""))):
            return f"tools.{j}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{j}.custom.input_schema: Field required with type 'object'"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        if body.get("temperature") not in (None, 1, 1.0):
            return "`temperature` may only be set to 1 when thinking is enabled"
    if _count_cache_control(body) > 4:
        return (f"A maximum of 4 blocks with cache_control may be provided. "
                f"Found {_count_cache_control(body)}.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    seen_ids: set[str] = set()
    prev_tool_uses: list[str] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        role = msg["role"]
        if i == 0 and role != "user":
            return "messages: first message must use the \"user\" role"
        content = msg.get("content")
        is_last = i == len(messages) - 1
        if content is None or content == "" or content == []:
            if not (is_last and role == "assistant"):
                return (f"messages.{i}: all messages must have non-empty content except for "
                        "the optional final assistant message")
        blocks = _blocks(content)
        tool_uses: list[str] = []
        result_ids: list[str] = []
        seen_non_result = False
        for j, block in enumerate(blocks):
            if not isinstance(block, dict):
                return f"messages.{i}.content.{j}: Input should be an object"
            kind = block.get("type")
            where = f"messages.{i}.content.{j}"
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str) or not text:
                    return f"{where}.text: text content blocks must be non-empty"
                if not text.strip():
                    return f"{where}.text: text content blocks must contain non-whitespace text"
                seen_non_result = True
            elif kind == "image":
                if role != "user":
                    return f"{where}: image blocks are only allowed in user messages"
                seen_non_result = True
            elif kind == "tool_use":
                if role != "assistant":
                    return f"{where}: tool_use blocks are only allowed in assistant messages"
                tid = block.get("id")
                if not isinstance(tid, str) or not tid:
                    return f"{where}.tool_use.id: Field required"
                if tid in seen_ids:
                    return f"{where}: `tool_use` ids must be unique"
                if not isinstance(block.get("input"), dict):
                    return f"{where}.tool_use.input: Input should be a valid dictionary"
                if not _TOOL_NAME.match(str(block.get("name", ""))):
                    return f"{where}.tool_use.name: String should match pattern"
                seen_ids.add(tid)
                tool_uses.append(tid)
            elif kind == "tool_result":
                if role != "user":
                    return f"{where}: tool_result blocks are only allowed in user messages"
                if seen_non_result:
                    return (f"messages.{i}: tool_result blocks must come before any other content "
                            "in a user message")
                tid = block.get("tool_use_id")
                if tid not in prev_tool_uses:
                    return (f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                            "Each `tool_result` block must have a corresponding `tool_use` block in "
                            "the previous message.")
                inner = block.get("content")
                if isinstance(inner, list):
                    for k, sub in enumerate(inner):
                        if (isinstance(sub, dict) and sub.get("type") == "text"
                                and not str(sub.get("text", "")).strip()):
                            return f"{where}.content.{k}.text: text content blocks must be non-empty"
                result_ids.append(tid)
            elif kind == "thinking":
                if role != "assistant":
                    return f"{where}: thinking blocks are only allowed in assistant messages"
                if not isinstance(block.get("signature"), str) or not block.get("signature"):
                    return f"{where}.thinking.signature: Field required"
                if not isinstance(block.get("thinking"), str):
                    return f"{where}.thinking.thinking: Field required"
            elif kind == "redacted_thinking":
                if not isinstance(block.get("data"), str) or not block.get("data"):
                    return f"{where}.redacted_thinking.data: Field required"
            else:
                return f"{where}: unknown content block type {kind!r}"
        if prev_tool_uses:
            missing = [t for t in prev_tool_uses if t not in result_ids]
            if missing:
                return (f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                        "corresponding `tool_result` block in the next message.")
        prev_tool_uses = tool_uses
    if prev_tool_uses:
        return (f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` "
                f"blocks immediately after: {', '.join(prev_tool_uses)}. Each `tool_use` block must "
                "have a corresponding `tool_result` block in the next message.")
    return None


def validate_openai(body: Any) -> tuple[str, str | None] | None:
    """(message, param) of the first reason Chat Completions would answer 400, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object", None
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter", "model"
    if body.get("stream_options") is not None and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
    for j, tool in enumerate(body.get("tools") or []):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(fn, dict):
            return f"Invalid value for 'tools[{j}]': expected a function tool.", f"tools[{j}]"
        if not re.match(r"^[a-zA-Z0-9_-]{1,64}$", str(fn.get("name", ""))):
            return (f"Invalid 'tools[{j}].function.name': string does not match pattern.",
                    f"tools[{j}].function.name")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages"
    pending: list[str] = []  # tool_call ids still waiting for their tool message
    answerable: set[str] = set()
    pending_from = -1
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return (f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                    "'tool', and 'developer'.", f"messages.[{i}].role")
        if pending and role != "tool":
            return ("An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                    f"response messages: {', '.join(pending)}", f"messages.[{pending_from}].role")
        content = msg.get("content")
        if role == "tool":
            tid = msg.get("tool_call_id")
            if tid not in answerable:
                return ("Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceding message with 'tool_calls'.", f"messages.[{i}].role")
            if not isinstance(content, (str, list)):
                return f"Invalid type for 'messages[{i}].content': expected a string.", f"messages.[{i}].content"
            if tid in pending:
                pending.remove(tid)
            continue
        answerable = set()
        if role == "assistant":
            calls = msg.get("tool_calls")
            if calls:
                for k, call in enumerate(calls):
                    fn = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(fn, dict) or not isinstance(call.get("id"), str):
                        return (f"Missing required parameter: 'messages[{i}].tool_calls[{k}].id'.",
                                f"messages.[{i}].tool_calls")
                    if not isinstance(fn.get("arguments"), str):
                        return (f"Invalid type for 'messages[{i}].tool_calls[{k}].function.arguments': "
                                "expected a string.", f"messages.[{i}].tool_calls")
                pending = [c["id"] for c in calls]
                answerable = set(pending)
                pending_from = i
            elif content is None or content == "":
                return (f"Invalid value for 'messages[{i}].content': expected a non-empty string "
                        "when there are no tool_calls.", f"messages.[{i}].content")
        elif content is None:
            return (f"Invalid type for 'messages[{i}].content': expected one of a string or array, "
                    "but got null.", f"messages.[{i}].content")
    if pending:
        return ("An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}", f"messages.[{pending_from}].role")
    return None
