"""A provider that replays a fixed script of model turns.

For tests, benchmarks, demos, and for users checking their own tools and skills
without an API key: each request to the provider consumes the next turn of the script.

Script format (JSON)
--------------------

A script file holds a list of turns, or an object ``{"turns": [...]}``. Each turn is an
object; every key is optional::

    [
      {"text": "Let me look.",
       "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
      {"thinking": "The README says...", "text": "It is a demo project."}
    ]

``text``        the answer text, streamed in chunks.
``thinking``    reasoning shown before the answer (``signature`` optional).
``tool_calls``  a list of ``{"name": str, "input": object | str, "id": str}``; ``id`` is
                generated when missing; an ``input`` string that is not valid JSON is
                passed on as the model's raw, unparsable arguments.
``usage``       ``{"input_tokens", "output_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens"}``; zeros when missing.
``stop_reason`` ``end_turn`` (default), ``tool_use`` (default when there are tool
                calls), ``max_tokens``, ...
``error``       ``{"kind": "rate_limit", "message": "...", "retry_after": 1.0}``: the
                request fails with that ProviderError kind (auth, rate_limit,
                overloaded, server, connection, stream_broken, usage_limit, ...);
                a usage_limit may say ``"resets_in": 90`` (seconds from the
                request). With ``text`` as well, the text streams first and the
                error breaks the stream.
``chunk_size``  characters per streamed text chunk (default: the provider's, 32).
``delay``       seconds to wait before each chunk (to watch streaming or test Esc).

In Python the script can also be a list of such dicts, or a callable
``(request, index) -> turn`` (return ``None`` to end the script), which generates long
sessions without holding them in memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..messages import Message, Part, TextPart, ThinkingPart, ToolUsePart
from ..usage import Usage
from .base import (
    ERROR_KINDS,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    StreamCompleted,
    StreamText,
    StreamThinking,
    StreamToolUseStart,
    error_kind,
)

Turn = Mapping[str, Any]
ScriptSource = Sequence[Turn] | str | os.PathLike[str] | Callable[[ProviderRequest, int], Turn | None]

_TURN_KEYS = frozenset({"text", "thinking", "signature", "tool_calls", "usage", "stop_reason",
                        "error", "chunk_size", "delay"})


def load_script(path: str | os.PathLike[str]) -> list[Turn]:
    """Read a JSON script file; a clear ProviderError(kind="config") when it is unusable."""
    where = Path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProviderError("config", f"cannot read script {str(where)!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ProviderError("config", f"script {str(where)!r} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and "turns" in data:
        data = data["turns"]
    if not isinstance(data, list):
        raise ProviderError("config", f"script {str(where)!r} must hold a list of turns (or {{\"turns\": [...]}})")
    for number, turn in enumerate(data, 1):
        _check_turn(turn, number)
    return data


def _check_turn(turn: Any, number: int) -> None:
    if not isinstance(turn, Mapping):
        raise ProviderError("config", f"script turn {number} must be an object, not {type(turn).__name__}")
    unknown = set(turn) - _TURN_KEYS
    if unknown:
        raise ProviderError("config", f"script turn {number} has unknown keys: {', '.join(sorted(unknown))} "
                                      f"(allowed: {', '.join(sorted(_TURN_KEYS))})")
    for key in ("text", "thinking"):
        if key in turn and not isinstance(turn[key], str):
            raise ProviderError("config", f"script turn {number}: {key!r} must be a string")
    calls = turn.get("tool_calls", [])
    if not isinstance(calls, list) or not all(isinstance(c, Mapping) and isinstance(c.get("name"), str)
                                                for c in calls):
        raise ProviderError("config",
                            f"script turn {number}: 'tool_calls' must be a list of objects with a 'name'")
    error = turn.get("error")
    if error is not None and (not isinstance(error, Mapping) or error_kind(error.get("kind")) is None):
        raise ProviderError("config", f"script turn {number}: 'error' needs a 'kind' among "
                                      f"{', '.join(sorted(ERROR_KINDS))}")
    resets_in = error.get("resets_in") if error is not None else None
    if resets_in is not None and (isinstance(resets_in, bool) or not isinstance(resets_in, (int, float))):
        raise ProviderError("config", f"script turn {number}: 'resets_in' must be a number of seconds")


def _chunks(text: str, size: int) -> list[str]:
    if size <= 0 or len(text) <= size:
        return [text] if text else []
    return [text[i:i + size] for i in range(0, len(text), size)]


class ScriptedProvider:
    """Replays ``script`` one turn per request."""

    name = "scripted"

    def __init__(self, script: ScriptSource, *, chunk_size: int = 32, record_requests: bool = False) -> None:
        self._generate: Callable[[ProviderRequest, int], Turn | None] | None = None
        self._turns: Sequence[Turn] = ()
        if callable(script):
            self._generate = script
        elif isinstance(script, (str, os.PathLike)):
            self._turns = load_script(script)
        else:
            for number, turn in enumerate(script, 1):
                _check_turn(turn, number)
            self._turns = list(script)
        self._chunk_size = chunk_size
        self._index = 0
        self.last_request: ProviderRequest | None = None
        # Every request, when asked for (a long session would otherwise keep them all).
        self.requests: list[ProviderRequest] | None = [] if record_requests else None

    @property
    def calls(self) -> int:
        """How many requests have been served (turns consumed)."""
        return self._index

    def _next_turn(self, request: ProviderRequest) -> tuple[Turn, int]:
        index = self._index
        if self._generate is not None:
            turn = self._generate(request, index)
            if turn is None:
                raise ProviderError("config", f"the scripted provider's script ended after {index} turns")
            _check_turn(turn, index + 1)
        elif index < len(self._turns):
            turn = self._turns[index]
        else:
            raise ProviderError("config", f"the scripted provider's script has no turn {index + 1} "
                                          f"(it has {len(self._turns)}); add turns to the script")
        self._index = index + 1
        return turn, index

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.last_request = request
        if self.requests is not None:
            self.requests.append(request)
        turn, index = self._next_turn(request)
        size = int(turn.get("chunk_size") or self._chunk_size)
        delay = float(turn.get("delay") or 0.0)
        # One suspension per turn keeps a scripted run from starving the event loop.
        await asyncio.sleep(delay if delay > 0 else 0)
        parts: list[Part] = []
        streamed = False

        thinking = turn.get("thinking") or ""
        if thinking:
            for piece in _chunks(thinking, size):
                if delay > 0 and streamed:
                    await asyncio.sleep(delay)
                streamed = True
                yield StreamThinking(piece)
            parts.append(ThinkingPart(thinking, signature=turn.get("signature")))

        text = turn.get("text") or ""
        for piece in _chunks(text, size):
            if delay > 0 and streamed:
                await asyncio.sleep(delay)
            streamed = True
            yield StreamText(piece)
        if text:
            parts.append(TextPart(text))

        error = turn.get("error")
        if error is not None:
            retry_after = error.get("retry_after")
            kind = error_kind(error["kind"]) or "config"  # checked when the script was read
            resets_in = error.get("resets_in")
            raise ProviderError(kind, str(error.get("message") or f"scripted {kind} error"),
                                status=error.get("status"),
                                retry_after=float(retry_after) if retry_after is not None else None,
                                partial_output=streamed,
                                resets_at=time.time() + float(resets_in) if resets_in is not None else None)

        calls = turn.get("tool_calls") or ()
        for k, call in enumerate(calls):
            call_id = str(call.get("id") or f"toolu_scripted_{index + 1}_{k + 1}")
            raw = call.get("input", {})
            raw_input: str | None = None
            if isinstance(raw, str):
                try:
                    value = json.loads(raw)
                except ValueError:
                    value = None
                if isinstance(value, dict):
                    raw = value
                else:
                    raw_input, raw = raw, {}
            yield StreamToolUseStart(call_id, str(call["name"]))
            parts.append(ToolUsePart(call_id, str(call["name"]), dict(raw), raw_input=raw_input))

        stop = turn.get("stop_reason") or ("tool_use" if calls else "end_turn")
        usage = Usage.from_dict(turn.get("usage") or {})
        yield StreamCompleted(Message("assistant", tuple(parts)), str(stop), usage)
