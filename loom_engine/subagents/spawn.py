"""Running a sub-agent for the ``task`` tool.

The child gets its own history, a narrower configuration (one level deeper, the
parent's tools at most, a smaller turn limit — see :meth:`AgentConfig.inherit`), the
parent's permission rules followed live, and the parent's cancel token as its parent.
Its events are forwarded to the parent's stream, tagged with the parent's call, and
only its final answer comes back as the tool's result.

A custom agent (:mod:`.definitions`) shapes the child further, always within the
parent: its tools are taken from the parent's (less ``task`` unless it names it, and
never ``task`` at the deepest level), its skills and MCP servers only narrow, its model
may differ (the provider of that model is built for it; a project agent's model only once
the workspace is trusted, see :mod:`.definitions`), and its permission mode is the
narrower of its own and the parent's (see ``PermissionManager.child``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from typing import Any, Protocol

from ..config import AgentConfig
from ..events import TERMINAL_EVENTS, AgentEvent, Finished
from ..execution import CancelToken
from ..mcp.names import belongs_to, is_mcp_name
from ..messages import Message
from ..metrics import RunMetrics
from ..providers.base import Provider, ProviderError
from ..providers.models import lookup
from ..tools.base import ToolOutput
from ..transcript import SubagentRun
from .definitions import AgentDefinition

TASK_TOOL = "task"


class ChildAgent(Protocol):
    metrics: RunMetrics

    @property
    def messages(self) -> tuple[Message, ...]: ...

    def run(self, prompt: str, *, cancel: CancelToken | None = None) -> AsyncIterator[AgentEvent]: ...


# Builds a provider by its name ("openai"...); ProviderError(kind="config") when it cannot.
MakeProvider = Callable[[str], Provider]


class MakeChild(Protocol):
    """Builds the child from its configuration, the parent's tool call id and, for a
    custom agent, its definition (given only then, so a two-argument maker still works)."""

    def __call__(self, config: AgentConfig, parent_call_id: str,
                 definition: AgentDefinition | None = None, /) -> ChildAgent: ...


def child_config(parent_config: AgentConfig, *, parent_tools: Collection[str], default_tools: Sequence[str],
                 tools: Sequence[str] | None, definition: AgentDefinition | None
                 ) -> tuple[AgentConfig, list[str]]:
    """The child's configuration, and the tools the call asked for that the parent does
    not have (an agent file's own are not the calling model's doing: `loom agents` shows them)."""
    unknown = [t for t in (tools or ()) if t not in parent_tools]
    if definition is None:
        return parent_config.inherit(tools=tuple(tools or default_tools)), unknown
    wanted = list(definition.tools) if definition.tools is not None else \
        [t for t in parent_tools if t != TASK_TOOL]
    if tools:  # the call may narrow the agent's tools further, never widen them
        wanted = [t for t in wanted if t in tools]
    wanted = [t for t in wanted if t in parent_tools and t not in definition.disallowed_tools]
    if definition.mcp_servers is not None:
        servers = tuple(definition.mcp_servers)
        wanted = [t for t in wanted if not is_mcp_name(t) or belongs_to(t, servers)]
    if parent_config.depth + 1 >= parent_config.max_depth:
        wanted = [t for t in wanted if t != TASK_TOOL]  # its own task calls could only be refused
    changes: dict[str, Any] = {"agent_type": definition.name}
    if definition.model is not None and definition.model != parent_config.model:
        vendor = lookup(definition.model).provider
        provider = vendor if vendor != "unknown" and parent_config.provider != "scripted" \
            else parent_config.provider
        changes.update(model=definition.model, provider=provider, context_window=None)
    if definition.max_turns is not None:
        changes["max_turns"] = min(definition.max_turns, parent_config.max_turns)
    config = parent_config.inherit(tools=tuple(wanted), skills=definition.skills, **changes)
    return config, unknown


async def run_subagent(make_child: MakeChild, *, parent_config: AgentConfig, parent_tools: Collection[str],
                       default_tools: Sequence[str], metrics: RunMetrics, description: str, prompt: str,
                       tools: Sequence[str] | None,
                       parent_call_id: str, cancel: CancelToken,
                       emit: Callable[[AgentEvent], None],
                       definition: AgentDefinition | None = None,
                       record: Callable[[SubagentRun], None] | None = None) -> ToolOutput:
    """Run a child agent to completion; only its final answer comes back.

    ``default_tools`` are the child's tools when the call names none (the parent derives
    them from its tools' declarations: see ``subagent_tool_names``). ``definition`` is
    the custom agent the child runs as (None: the general read-only sub-agent).
    ``record`` is given the finished child's run (its history, usage and cost)."""
    if parent_config.depth + 1 > parent_config.max_depth:
        return ToolOutput(f"Sub-agents may nest at most {parent_config.max_depth} deep; do this task "
                          "yourself.", is_error=True)
    config, unknown = child_config(parent_config, parent_tools=parent_tools, default_tools=default_tools,
                                   tools=tools, definition=definition)
    try:
        child = make_child(config, parent_call_id) if definition is None else \
            make_child(config, parent_call_id, definition)
    except (ProviderError, ValueError) as error:
        who = f"the {definition.name} agent" if definition is not None else "the sub-agent"
        return ToolOutput(f"Could not start {who} (model {config.model}): {error}", is_error=True)
    final: AgentEvent | None = None
    started = time.time()
    try:
        async for event in child.run(prompt, cancel=cancel.child()):
            if isinstance(event, TERMINAL_EVENTS):
                final = event
            emit(event)
    finally:
        metrics.merge_child(child.metrics)
        if record is not None:
            outcome = "finished" if isinstance(final, Finished) else type(final).__name__ if final else "stopped"
            record(SubagentRun(call_id=parent_call_id, description=description,
                               agent_type=definition.name if definition is not None else None, model=config.model,
                               messages=child.messages, usage=child.metrics.usage, cost_usd=child.metrics.cost_usd,
                               started=started, ended=time.time(), outcome=outcome))
    spent = child.metrics
    calls = "call" if spent.llm_calls == 1 else "calls"
    tools = "call" if spent.tool_calls == 1 else "calls"
    kind = f"{definition.name} sub-agent" if definition is not None else "sub-agent"
    summary = (f"[{kind} '{description}': {spent.llm_calls} LLM {calls}, {spent.tool_calls} tool {tools}, "
               f"{spent.usage.input_tokens + spent.usage.output_tokens} tokens, ${spent.cost_usd:.4f}]")
    note = f"\n(ignored tools the parent does not have: {', '.join(unknown)})" if unknown else ""
    if definition is not None and definition.untrusted_model not in (None, config.model):
        note += (f"\n(model {definition.untrusted_model} of the agent file not used (workspace not trusted): "
                 f"ran on {config.model})")
    if isinstance(final, Finished):
        if final.cut_off:  # the parent model must not take a half answer for a whole one
            note += "\n(the sub-agent's answer was cut off at its output limit: it is incomplete)"
        return ToolOutput((final.result or "(the sub-agent gave no answer)") + "\n\n" + summary + note)
    last_text = next((m.text for m in reversed(child.messages) if m.role == "assistant" and m.text), "")
    what = getattr(final, "message", None) or getattr(final, "reason", None) or type(final).__name__
    return ToolOutput(f"The sub-agent did not finish ({what}). Its last words: {last_text or '(none)'}\n\n"
                      + summary + note, is_error=True)
