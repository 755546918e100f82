"""The seam for where the tools' file I/O and commands happen (loom_engine/tools/io.py).

A front end's backends reach every tool call's context from the agent's parts (and a
sub-agent's, which shares them); with none, the tools use Loom's own, which keep what
Loom always did (a file's mode across a write; the process tree of a command).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from builtin_tools._files.access import LocalFileAccess
from builtin_tools.bash import BashInput, BashTool
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import ToolFinished
from loom_engine.execution import CancelToken
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.tools.io import CommandOutcome, CommandSpec
from loom_engine.workspace import Workspace


class RecordingRunner:
    """A front end's runner that runs nothing and says what it was given."""

    def __init__(self) -> None:
        self.specs: list[CommandSpec] = []

    def can_pass_descriptors(self) -> bool:
        return False

    async def run(self, spec: CommandSpec, *, output: Callable[[str], None], timeout: float,
                  cancel: CancelToken) -> CommandOutcome:
        self.specs.append(spec)
        output("from the front end\n")
        return CommandOutcome("exited", 0, False, terminal_id="t-7")


async def test_an_agent_s_bash_calls_reach_the_runner_its_parts_give(tmp_path: Path) -> None:
    runner = RecordingRunner()
    provider = ScriptedProvider([{"tool_calls": [{"name": "bash", "input": {"command": "echo hi"}}]},
                                 {"text": "done"}])
    agent = Agent(AgentConfig(model="test-model"),
                  AgentParts(provider=provider, tools=[BashTool()], workspace=Workspace.at(tmp_path),
                             commands=runner, files=LocalFileAccess()),
                  system_prompt="You are a test.")
    results = [event for event in [e async for e in agent.run("go")] if isinstance(event, ToolFinished)]
    assert [spec.argv[2].endswith("; echo hi") for spec in runner.specs] == [True]
    assert [r.content.startswith("from the front end") for r in results] == [True]
    assert results[0].display is not None and results[0].display["terminal_id"] == "t-7"  # for the editor


async def test_bash_hands_the_prepared_command_to_the_front_ends_runner(tmp_path: Path) -> None:
    runner = RecordingRunner()
    ctx = ToolContext(workspace=Workspace.at(tmp_path), cancel=CancelToken(), state=ToolSessionState(),
                      call_id="call-3", commands=runner)
    result = await BashTool().run(BashInput(command="echo hi"), ctx)
    assert result.content.startswith("from the front end\n")
    assert result.display is not None and result.display["terminal_id"] == "t-7"
    [spec] = runner.specs
    assert spec.argv[:2] == ("bash", "-c") and spec.argv[2].endswith("; echo hi")
    assert spec.call_id == "call-3" and spec.env["LOOM_BASH_CALL"] == spec.marker and spec.pass_fds == ()


async def test_loom_s_own_file_access_keeps_a_file_s_mode(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("old\n")
    path.chmod(0o750)
    files = LocalFileAccess()
    await files.write(path, b"new\n", mode=0o750, shown="run.sh")
    opened = await files.open_read(path, "run.sh")
    with opened.handle as handle:
        assert handle.read() == b"new\n"
    assert opened.size == 4 and opened.st_mode is not None
    assert os.stat(path).st_mode & 0o777 == 0o750
