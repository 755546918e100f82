"""Running a sub-agent for the ``task`` tool.

The child gets its own history, a narrower configuration (one level deeper, the
parent's tools at most, a smaller turn limit — see :meth:`AgentConfig.inherit`), the
parent's permission rules followed live, and the parent's cancel token as its parent.
Its events are forwarded to the parent's stream, tagged with the parent's call, and
only its final answer comes back as the tool's result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from typing import Protocol

from ..config import AgentConfig
from ..events import TERMINAL_EVENTS, AgentEvent, Finished
from ..execution import CancelToken
from ..messages import Message
from ..metrics import RunMetrics
from ..tools.base import ToolOutput


class ChildAgent(Protocol):
    metrics: RunMetrics

    @property
    def messages(self) -> tuple[Message, ...]: ...

    def run(self, prompt: str, *, cancel: CancelToken | None = None) -> AsyncIterator[AgentEvent]: ...


# Builds the child from its configuration and the parent's tool call id.
MakeChild = Callable[[AgentConfig, str], ChildAgent]


async def run_subagent(make_child: MakeChild, *, parent_config: AgentConfig, parent_tools: Collection[str],
                       default_tools: Sequence[str], metrics: RunMetrics, description: str, prompt: str,
                       tools: Sequence[str] | None,
                       parent_call_id: str, cancel: CancelToken,
                       emit: Callable[[AgentEvent], None]) -> ToolOutput:
    """Run a child agent to completion; only its final answer comes back.

    ``default_tools`` are the child's tools when the call names none (the parent derives
    them from its tools' declarations: see ``subagent_tool_names``)."""
    if parent_config.depth + 1 > parent_config.max_depth:
        return ToolOutput(f"Sub-agents may nest at most {parent_config.max_depth} deep; do this task "
                          "yourself.", is_error=True)
    child = make_child(parent_config.inherit(tools=tuple(tools or default_tools)), parent_call_id)
    unknown = [t for t in (tools or ()) if t not in parent_tools]
    final: AgentEvent | None = None
    try:
        async for event in child.run(prompt, cancel=cancel.child()):
            if isinstance(event, TERMINAL_EVENTS):
                final = event
            emit(event)
    finally:
        metrics.merge_child(child.metrics)
    spent = child.metrics
    calls = "call" if spent.llm_calls == 1 else "calls"
    tools = "call" if spent.tool_calls == 1 else "calls"
    summary = (f"[sub-agent '{description}': {spent.llm_calls} LLM {calls}, {spent.tool_calls} tool {tools}, "
               f"{spent.usage.input_tokens + spent.usage.output_tokens} tokens, ${spent.cost_usd:.4f}]")
    note = f"\n(ignored tools the parent does not have: {', '.join(unknown)})" if unknown else ""
    if isinstance(final, Finished):
        return ToolOutput((final.result or "(the sub-agent gave no answer)") + "\n\n" + summary + note)
    last_text = next((m.text for m in reversed(child.messages) if m.role == "assistant" and m.text), "")
    what = getattr(final, "message", None) or getattr(final, "reason", None) or type(final).__name__
    return ToolOutput(f"The sub-agent did not finish ({what}). Its last words: {last_text or '(none)'}\n\n"
                      + summary + note, is_error=True)
