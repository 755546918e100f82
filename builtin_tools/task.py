"""task: hand a self-contained job to a sub-agent with its own history.

Given the custom agents found (``.loom/agents/*.md``...), the tool takes a
``subagent_type`` and its description lists each agent with its description (level 1:
the model picks one by what it is for; the agent's body is read only when it runs). That
list is sorted and built once, so the tools block stays byte-identical across turns and
runs and the prompt cache keeps hitting.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from loom_engine.subagents.definitions import AgentCatalog
from loom_engine.tools.base import BaseTool, Tool, ToolContext, ToolOutput


class TaskInput(BaseModel):
    description: str = Field(description="A short (3-7 word) label for the task, shown to the user.")
    prompt: str = Field(description="The complete, self-contained instructions for the sub-agent. It sees "
                                    "nothing of this conversation, so include every path and fact it needs, "
                                    "and say exactly what it should report back.")
    tools: list[str] | None = Field(None, description="Tools the sub-agent may use (default: read_file, glob, "
                                                      "grep, ls). Only tools you have can be given.")


class TaskAgentInput(TaskInput):
    subagent_type: str | None = Field(None, description="The agent to run, one of those listed in this tool's "
                                                        "description; it brings its own tools (tools can only "
                                                        "narrow them). Omit it for a general read-only "
                                                        "researcher.")


_DESCRIPTION = (
    "Start a sub-agent for a self-contained job, typically research across many files (find where X is "
    "handled, summarise how Y works). It runs with its own history and read-only tools by default, and "
    "only its final answer comes back, which keeps your context small. Several task calls in one "
    "message run in parallel. Do not use it for a single file read or a simple search.")


class TaskTool(BaseTool[TaskInput]):
    name = "task"
    description = _DESCRIPTION
    input_model: type[TaskInput] = TaskInput
    is_concurrency_safe = True
    is_read_only = True
    guidance = (
        "task starts a sub-agent with its own fresh history and read-only tools, for "
        "self-contained research such as finding where something is handled across many "
        "files. Several task calls in one message run in parallel. The sub-agent sees "
        "nothing of this conversation, so give it every path and fact it needs and say "
        "what to report; only its final answer comes back. Do not use it for a single "
        "read or search.")
    session_only = True

    def __init__(self, agents: AgentCatalog | None = None) -> None:
        self.agents = agents if agents is not None and len(agents) else None
        if self.agents is not None:
            self.input_model = TaskAgentInput
            self.description = (
                _DESCRIPTION + "\n\nAgents you can start by passing subagent_type (each gets its own "
                "instructions and tools; pick the one whose description fits the job):\n"
                + self.agents.index_text())

    async def run(self, args: TaskInput, ctx: ToolContext) -> ToolOutput:
        if ctx.spawn_subagent is None:
            return ToolOutput("Sub-agents are not available here; do the task yourself.", is_error=True)
        tools = tuple(args.tools) if args.tools else None
        wanted = getattr(args, "subagent_type", None)
        if wanted is None or not wanted.strip():
            return await ctx.spawn_subagent(description=args.description, prompt=args.prompt, tools=tools)
        agent = self.agents.get(wanted) if self.agents is not None else None
        if agent is None:
            names = ", ".join(self.agents.names()) if self.agents is not None else "none"
            return ToolOutput(f"Unknown subagent_type {wanted!r}. Available agents: {names} (or omit "
                              "subagent_type for a general read-only researcher).", is_error=True)
        return await ctx.spawn_subagent(description=args.description, prompt=args.prompt, tools=tools,
                                        agent=agent)


def with_agents(tools: Sequence[Tool], agents: AgentCatalog | None) -> list[Tool]:
    """``tools`` with the task tool replaced by one that offers ``agents``."""
    return [TaskTool(agents) if isinstance(tool, TaskTool) else tool for tool in tools]
