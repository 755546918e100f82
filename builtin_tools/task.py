"""task: hand a self-contained job to a sub-agent with its own history."""

from __future__ import annotations

from pydantic import BaseModel, Field

from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput


class TaskInput(BaseModel):
    description: str = Field(description="A short (3-7 word) label for the task, shown to the user.")
    prompt: str = Field(description="The complete, self-contained instructions for the sub-agent. It sees "
                                    "nothing of this conversation, so include every path and fact it needs, "
                                    "and say exactly what it should report back.")
    tools: list[str] | None = Field(None, description="Tools the sub-agent may use (default: read_file, glob, "
                                                      "grep, ls). Only tools you have can be given.")


class TaskTool(BaseTool[TaskInput]):
    name = "task"
    description = (
        "Start a sub-agent for a self-contained job, typically research across many files (find where X is "
        "handled, summarise how Y works). It runs with its own history and read-only tools by default, and "
        "only its final answer comes back, which keeps your context small. Several task calls in one "
        "message run in parallel. Do not use it for a single file read or a simple search.")
    input_model = TaskInput
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

    async def run(self, args: TaskInput, ctx: ToolContext) -> ToolOutput:
        if ctx.spawn_subagent is None:
            return ToolOutput("Sub-agents are not available here; do the task yourself.", is_error=True)
        return await ctx.spawn_subagent(description=args.description, prompt=args.prompt,
                                        tools=tuple(args.tools) if args.tools else None)
