"""What each built-in tool declares about itself, and the sets Loom derives from that.

The rest of Loom keeps no lists of tool names: the permission groups, plan mode, the
sub-agent default set, the tool notes and the TUI's refresh all read these declarations,
so a new tool that declares itself correctly joins them.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from builtin_tools import default_tools
from loom_engine.context.assembler import ContextAssembler
from loom_engine.context.prompts import tool_guidance
from loom_engine.tools.base import BaseTool, Tool, ToolContext, ToolOutput

NAMES = ["read_file", "write_file", "edit_file", "multi_edit", "apply_patch", "glob", "grep", "ls",
         "bash", "todo_write", "task", "skill", "web_fetch"]


def test_default_tools_is_the_explicit_list_in_the_models_order() -> None:
    tools = default_tools()
    assert [t.name for t in tools] == NAMES
    assert all(isinstance(t, Tool) for t in tools)


def test_every_built_in_tool_writes_its_own_note() -> None:
    for tool in default_tools():
        assert tool.guidance.startswith(tool.name.split("_")[0]), tool.name


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
