"""A session as an ATIF trajectory: Harbor's Agent Trajectory Interchange Format, v1.8.

Benchmark harnesses (Harbor, behind Terminal-Bench) compare agents by their
trajectories; this turns a session file (see :mod:`.store`) into one, so a Loom run sits
in the same tools as any other agent's. The mapping:

- a user prompt is a ``user`` step; reminders, hook feedback and compaction summaries
  (user-role text Loom wrote itself) are ``system`` steps;
- each answer of the model is an ``agent`` step: its text, its thinking as
  ``reasoning_content``, its tool calls, and ``metrics`` (prompt tokens including cached
  ones, completion tokens, cached tokens, cost) with the model and time the session noted
  on the answer;
- the results of those calls are that step's ``observation``; an error or a refused
  call says so in the result's ``extra`` (``is_error``, ``refused``);
- a sub-agent's run is an embedded trajectory in ``subagent_trajectories``, referenced
  from the result of the ``task`` call that started it;
- a compaction's new history follows as steps marked ``is_copied_context``; a rewind is a
  ``system`` step saying where the conversation went back to.

Everything is redacted on the way out, as every other place that lets text leave.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..messages import Message, ThinkingPart, ToolResultPart
from ..redact import Redactor
from ..usage import Usage
from .store import SessionError

SCHEMA_VERSION = "ATIF-v1.8"
AGENT_NAME = "loom"

# How a result of a call that never ran begins: tools/authorize.py's denial_text (rules,
# hooks, a headless run) and transcript.py's refused_result_text (the user said no).
REFUSAL_PREFIXES = ("Refused", "Permission denied", "Blocked by a PreToolUse hook")
# Annotations that are not the conversation's own (the answer's cost is read; what the
# chat shows of a tool's result is the UI's).
_PRIVATE_META = ("call", "displays")

Json = dict[str, Any]


@dataclass(frozen=True)
class _Entry:
    """One message of the trajectory, with when it was written and how it got there."""

    message: Message
    time: float | None = None
    copied: bool = False  # part of a compaction's new history


def session_trajectory(path: Path, *, agent_version: str, redactor: Redactor | None = None) -> Json:
    """The session file at ``path`` as an ATIF trajectory (a JSON object).
    :class:`SessionError` when the file cannot be read or holds no conversation."""
    records = _records(path)
    header = records[0]
    session_id = str(header.get("id") or path.stem)
    model = str(header.get("model") or "")
    entries: list[_Entry] = []
    subagents: list[Json] = []
    refs: dict[str, Json] = {}
    for record in records[1:]:
        kind = record.get("type")
        if kind == "message":
            entries.append(_Entry(_message(record.get("message")), _number(record.get("time"))))
        elif kind == "model":
            model = str(record.get("model") or model)
        elif kind == "compaction":
            entries.extend(_Entry(_message(m), copied=True) for m in _list(record.get("messages")))
        elif kind == "rewind":
            to = str(record.get("to") or "")
            said = f"rewound to just before prompt {to}" if to else "the last rewind was undone"
            entries.append(_Entry(Message("system", (), meta={"rewind": said, "mode": record.get("mode", "both")}),
                                  _number(record.get("time"))))
        elif kind == "subagent":
            child = _subagent(record, session_id, agent_version)
            if child is not None:
                subagents.append(child)
                refs[str(record.get("call_id"))] = {"trajectory_id": child["trajectory_id"],
                                                    "session_id": session_id,
                                                    "extra": {"description": record.get("description", "")}}
    steps = _steps(entries, refs)
    if not steps:
        raise SessionError(f"session {session_id} has no messages to export")
    agent: Json = {"name": AGENT_NAME, "version": agent_version, "extra": {"provider": header.get("provider", "")}}
    if model:
        agent["model_name"] = model
    trajectory: Json = {"schema_version": SCHEMA_VERSION, "session_id": session_id, "trajectory_id": session_id,
                        "agent": agent, "steps": steps,
                        "final_metrics": _final_metrics(steps, sum(s["final_metrics"]["total_cost_usd"]
                                                                   for s in subagents))}
    extra: Json = {"workspace": header.get("workspace", "")}
    created = _iso(_number(header.get("created")))
    if created:
        extra["created"] = created
    if header.get("forked_from"):
        extra["forked_from"] = header["forked_from"]
    trajectory["extra"] = extra
    if subagents:
        trajectory["subagent_trajectories"] = subagents
    return (redactor or Redactor()).redact_tree(trajectory)


def _subagent(record: Mapping[str, Any], session_id: str, agent_version: str) -> Json | None:
    messages = [_message(m) for m in _list(record.get("messages"))]
    started = _number(record.get("started"))
    entries = [_Entry(m, started if i == 0 else None) for i, m in enumerate(messages)]
    steps = _steps(entries, {})
    if not steps:
        return None
    call_id = str(record.get("call_id") or "")
    agent: Json = {"name": AGENT_NAME, "version": agent_version,
                   "extra": {"agent_type": record.get("agent_type") or "general",
                             "description": record.get("description", "")}}
    if record.get("model"):
        agent["model_name"] = str(record["model"])
    final = _final_metrics(steps, 0.0)
    cost = _number(record.get("cost_usd"))
    if cost is not None:  # the run's own total: its own sub-agents' cost included
        final["total_cost_usd"] = cost
    return {"schema_version": SCHEMA_VERSION, "session_id": session_id, "trajectory_id": f"{session_id}/{call_id}",
            "agent": agent, "steps": steps, "final_metrics": final,
            "extra": {"parent_tool_call_id": call_id, "outcome": record.get("outcome", ""),
                      "started": _iso(started), "ended": _iso(_number(record.get("ended")))}}


def _steps(entries: Sequence[_Entry], refs: Mapping[str, Json]) -> list[Json]:
    steps: list[Json] = []
    waiting: Json | None = None  # the agent step whose tool calls the next results answer
    for entry in entries:
        message = entry.message
        if message.role == "assistant":
            step = _agent_step(entry)
            waiting = step if "tool_calls" in step else None
        elif message.role == "tool":
            calls = {c["tool_call_id"] for c in waiting.get("tool_calls", ())} if waiting else set()
            results = [_result(part, refs, answered=part.tool_use_id in calls) for part in message.tool_results_parts]
            images = len(message.parts) - len(results)
            if waiting is not None and all(r.get("source_call_id") for r in results):
                waiting.setdefault("observation", {"results": []})["results"].extend(results)
                if images:
                    waiting.setdefault("extra", {})["images_returned"] = images
                waiting = None
                continue
            step = {"source": "system", "message": "", "observation": {"results": results}}
            waiting = None
        else:
            step = _said_step(entry)
            waiting = None
        if entry.time is not None and "timestamp" not in step:
            step["timestamp"] = _iso(entry.time)
        if entry.copied:
            step["is_copied_context"] = True
        steps.append(step)
    for number, step in enumerate(steps, 1):
        step["step_id"] = number
    return [{"step_id": s.pop("step_id"), **s} for s in steps]


def _agent_step(entry: _Entry) -> Json:
    message = entry.message
    call = message.meta.get("call")
    step: Json = {"source": "agent", "message": message.text}
    if isinstance(call, Mapping):
        when = _number(call.get("time"))
        if when is not None:
            step["timestamp"] = _iso(when)
        if call.get("model"):
            step["model_name"] = str(call["model"])
    thinking = "".join(p.thinking for p in message.parts if isinstance(p, ThinkingPart))
    if thinking:
        step["reasoning_content"] = thinking
    calls = []
    for use in message.tool_uses:
        tool_call: Json = {"tool_call_id": use.id, "function_name": use.name, "arguments": dict(use.input)}
        if use.raw_input is not None:  # the model's arguments were not valid JSON
            tool_call["extra"] = {"raw_arguments": use.raw_input}
        calls.append(tool_call)
    if calls:
        step["tool_calls"] = calls
    if isinstance(call, Mapping):
        step["metrics"] = _metrics(call)
        step["llm_call_count"] = 1
    extra = _meta_extra(message)
    if extra:
        step["extra"] = extra
    return step


def _said_step(entry: _Entry) -> Json:
    """A user prompt, or text Loom added in the user's place (a ``system`` step)."""
    message = entry.message
    meta = message.meta
    own = message.role == "system" or bool(meta.get("reminder") or meta.get("summary")) \
        or message.text.startswith(("Stop hook feedback", "SubagentStop hook feedback"))
    step: Json = {"source": "system" if own else "user", "message": message.text or str(meta.get("rewind", ""))}
    extra = _meta_extra(message)
    images = sum(1 for p in message.parts if p.type == "image")
    if images:
        extra["images"] = images  # sent inline to the model; ATIF names image files only
    if extra:
        step["extra"] = extra
    return step


def _result(part: ToolResultPart, refs: Mapping[str, Json], *, answered: bool) -> Json:
    result: Json = {"source_call_id": part.tool_use_id if answered else None, "content": part.content}
    extra: Json = {}
    if part.is_error:
        extra["is_error"] = True
        if part.content.startswith(REFUSAL_PREFIXES):
            extra["refused"] = True  # the call never ran
    if not answered:
        extra["tool_call_id"] = part.tool_use_id
    if extra:
        result["extra"] = extra
    ref = refs.get(part.tool_use_id)
    if ref is not None:
        result["subagent_trajectory_ref"] = [ref]
    return result


def _metrics(call: Mapping[str, Any]) -> Json:
    raw = call.get("usage")
    usage = Usage.from_dict(raw) if isinstance(raw, Mapping) else Usage()
    metrics: Json = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.output_tokens,
                     "cached_tokens": usage.cache_read_input_tokens}
    cost = _number(call.get("cost_usd"))
    if cost is not None:
        metrics["cost_usd"] = cost
    extra = {k: v for k, v in (("cache_creation_input_tokens", usage.cache_creation_input_tokens),
                               ("reasoning_tokens", usage.reasoning_tokens)) if v}
    if extra:
        metrics["extra"] = extra
    return metrics


def _final_metrics(steps: Sequence[Json], subagents_cost: float) -> Json:
    measured = [s["metrics"] for s in steps if "metrics" in s and not s.get("is_copied_context")]
    return {"total_prompt_tokens": sum(m["prompt_tokens"] for m in measured),
            "total_completion_tokens": sum(m["completion_tokens"] for m in measured),
            "total_cached_tokens": sum(m["cached_tokens"] for m in measured),
            "total_cost_usd": round(sum(m.get("cost_usd", 0.0) for m in measured) + subagents_cost, 8),
            "total_steps": len(steps)}


def _meta_extra(message: Message) -> Json:
    return {k: v for k, v in message.meta.items() if k not in _PRIVATE_META and k != "rewind"}


# --- reading -------------------------------------------------------------------------


def _records(path: Path) -> list[Json]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SessionError(f"no session file {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SessionError(f"session file {path.name} cannot be read: {error}") from None
    lines = text.splitlines()
    records: list[Json] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines) and not text.endswith("\n"):
                break  # a line cut off by a kill: everything before it is intact
            raise SessionError(f"session file {path.name} is malformed at line {number}") from None
        if not isinstance(record, dict):
            raise SessionError(f"session file {path.name} is malformed at line {number}")
        records.append(record)
    if not records or records[0].get("type") != "session":
        raise SessionError(f"session file {path.name} does not begin with a session header")
    return records


def _message(value: Any) -> Message:
    if not isinstance(value, dict):
        raise SessionError("a message record holds no message")
    try:
        return Message.from_dict(value)
    except (TypeError, ValueError, AttributeError) as error:
        raise SessionError(f"a message has the wrong shape ({error})") from None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _iso(when: float | None) -> str | None:
    """ISO 8601 in UTC; None for a time the session did not note (0: an old header)."""
    return datetime.fromtimestamp(when, UTC).isoformat() if when else None
