"""What each built-in tool declares about itself, and the sets Loom derives from that.

The rest of Loom keeps no lists of tool names: the permission groups, plan mode, the
sub-agent default set, the tool notes and the TUI's refresh all read these declarations,
so a new tool that declares itself correctly joins them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import BaseModel

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import DEFAULT_SUBAGENT_TOOLS, AgentConfig
from loom_engine.context.assembler import ContextAssembler
from loom_engine.context.prompts import tool_guidance
from loom_engine.events import AgentEvent, Finished
from loom_engine.execution import CancelToken
from loom_engine.messages import Message
from loom_engine.metrics import RunMetrics
from loom_engine.parts import AgentParts
from loom_engine.permissions.targets import FileAccess
from loom_engine.permissions.tool_facts import BUILTIN_TOOL_FACTS, ToolFacts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.tools.base import (
    BaseTool,
    Tool,
    ToolContext,
    ToolOutput,
    changes_workspace,
    subagent_tool_names,
)
from loom_engine.tools.function_tool import tool
from loom_engine.workspace import Workspace

NAMES = ["read_file", "write_file", "edit_file", "multi_edit", "apply_patch", "glob", "grep", "ls",
         "bash", "todo_write", "task", "skill", "web_fetch", "session_search", "memory", "recall"]


def test_default_tools_is_the_explicit_list_in_the_models_order() -> None:
    tools = default_tools()
    assert [t.name for t in tools] == NAMES
    assert all(isinstance(t, Tool) for t in tools)


def test_every_built_in_tool_writes_its_own_note() -> None:
    for each in default_tools():
        assert each.guidance.startswith(each.name.split("_")[0]), each.name


def test_tool_notes_follow_the_tools_given() -> None:
    tools = default_tools()
    notes = tool_guidance(tools)
    positions = [notes.index(t.guidance) for t in tools]
    assert positions == sorted(positions)
    assert tool_guidance([]) == ""


class EchoInput(BaseModel):
    text: str


class EchoTool(BaseTool[EchoInput]):
    name = "echo"
    description = "Say the text back."
    input_model = EchoInput
    guidance = "echo repeats its text; use it to test a plugin's note."

    async def run(self, args: EchoInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(args.text)


def test_a_new_tool_brings_its_note_into_the_system_prompt(tmp_path: Path) -> None:
    prompt = ContextAssembler(tmp_path, tools=[*default_tools(), EchoTool()],
                              user_config_dir=tmp_path / "config").system_prompt()
    assert "echo repeats its text; use it to test a plugin's note." in prompt
    assert "read_file returns numbered lines" in prompt


# --- the sub-agent's default tools ---------------------------------------------------------

class NotesInput(BaseModel):
    path: str


class ReadNotesTool(BaseTool[NotesInput]):
    """A plugin's read-only file reader: it declares so, and sub-agents get it."""

    name = "read_notes"
    description = "Read a notes file."
    input_model = NotesInput
    is_read_only = True
    is_concurrency_safe = True
    reads_files = True

    def permission_target(self, args: NotesInput, ctx: ToolContext) -> FileAccess:
        return FileAccess(paths=(args.path,), write=False)

    async def run(self, args: NotesInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("notes")


def test_the_sub_agent_default_is_the_read_only_file_readers() -> None:
    assert subagent_tool_names(default_tools()) == ("read_file", "glob", "grep", "ls")
    assert subagent_tool_names(default_tools()) == DEFAULT_SUBAGENT_TOOLS


async def test_a_read_only_file_reader_joins_the_sub_agents_default(tmp_path: Path) -> None:
    configs: list[AgentConfig] = []

    class Child:
        metrics = RunMetrics()
        messages: tuple[Message, ...] = ()

        async def run(self, prompt: str, *, cancel: CancelToken | None = None) -> AsyncIterator[AgentEvent]:
            yield Finished(result="done", num_turns=1)

    def make_child(config: AgentConfig, call_id: str) -> Child:
        configs.append(config)
        return Child()

    agent = Agent(AgentConfig(model="m"),
                  AgentParts(provider=ScriptedProvider([]), tools=[*default_tools(), ReadNotesTool()],
                             workspace=Workspace.at(tmp_path)), system_prompt="parent")
    agent._make_child = make_child  # type: ignore[method-assign]  # capture the child's configuration
    output = await agent.run_subagent(description="d", prompt="p", tools=None, parent_call_id="c",
                                      cancel=CancelToken(), emit=lambda e: None)
    assert not output.is_error
    assert configs[0].tool_names == ("read_file", "glob", "grep", "ls", "read_notes")


# --- permissions, plan mode and the TUI's refresh -------------------------------------------

def test_the_built_in_declarations_give_todays_rule_groups_and_plan_safe_set() -> None:
    facts = ToolFacts.of(default_tools())
    assert facts == BUILTIN_TOOL_FACTS  # what a manager built without its tools assumes
    assert facts.rule_tools(write=False) == {"read_file", "glob", "grep", "ls", "read"}
    assert facts.rule_tools(write=True) == {"write_file", "edit_file", "multi_edit", "apply_patch",
                                            "edit", "write"}
    assert facts.session_only == {"todo_write", "task", "skill"}


def test_the_tools_that_change_the_workspace() -> None:
    # memory writes Loom's data folder, not the workspace, but counts as a change (plan mode refuses it)
    assert {t.name for t in default_tools() if changes_workspace(t)} == {
        "edit_file", "multi_edit", "write_file", "apply_patch", "bash", "memory"}


def test_a_function_tool_brings_its_note(tmp_path: Path) -> None:
    @tool(read_only=True, guidance="shout returns the text in capitals.")
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    assert tool_guidance([shout]) == "# Tool notes\nshout returns the text in capitals."
