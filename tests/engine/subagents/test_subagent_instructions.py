"""A sub-agent reads the session's instruction files, as Claude Code's general-purpose
and custom sub-agents get the CLAUDE.md context (recorded against the fake server:
`claude -p` sends the user's and the project's CLAUDE.md in a sub-agent's request)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from builtin_tools import default_tools
from builtin_tools.task import with_agents
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.context.assembler import ContextAssembler
from loom_engine.context.prompts import SUBAGENT_INSTRUCTIONS
from loom_engine.events import Finished
from loom_engine.messages import Message, TextPart, ToolUsePart
from loom_engine.parts import AgentParts
from loom_engine.providers.base import ProviderRequest, StreamCompleted
from loom_engine.subagents.definitions import AgentCatalog
from loom_engine.usage import Usage
from loom_engine.workspace import Workspace


class Delegating:
    """The parent delegates once (to ``agent``, or the general sub-agent); the child
    reads ``gen/model.py``, then answers."""

    name = "delegating"

    def __init__(self, agent: str | None) -> None:
        self.agent = agent
        self.parent: list[ProviderRequest] = []
        self.child: list[ProviderRequest] = []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        if request.system.startswith("You are the parent"):
            self.parent.append(request)
            if len(self.parent) == 1:
                args = {"description": "look", "prompt": "read gen/model.py"}
                if self.agent is not None:
                    args["subagent_type"] = self.agent
                yield StreamCompleted(Message.assistant(ToolUsePart("t1", "task", args)), "tool_use", Usage(10, 1))
            else:
                yield StreamCompleted(Message.assistant(TextPart("parent done")), "end_turn", Usage(10, 1))
            return
        self.child.append(request)
        if len(self.child) == 1:
            call = ToolUsePart("c1", "read_file", {"path": "gen/model.py"})
            yield StreamCompleted(Message.assistant(call), "tool_use", Usage(10, 1))
        else:
            yield StreamCompleted(Message.assistant(TextPart("child done")), "end_turn", Usage(10, 1))


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    root, claude = tmp_path / "repo", tmp_path / "home" / ".claude"
    (root / "gen").mkdir(parents=True)
    (root / "gen" / "model.py").write_text("x = 1\n")
    (root / "CLAUDE.md").write_text("PROJECT-RULE: never edit gen/\n")
    (root / ".claude" / "rules").mkdir(parents=True)
    (root / ".claude" / "rules" / "gen.md").write_text("---\npaths: \"gen/**\"\n---\nGEN-RULE: built by make\n")
    (root / ".claude" / "agents").mkdir()
    (root / ".claude" / "agents" / "auditor.md").write_text(
        "---\nname: auditor\ndescription: audits\ntools: Read\n---\nAUDITOR-BODY\n")
    claude.mkdir(parents=True)
    (claude / "CLAUDE.md").write_text("USER-RULE: answer in English\n")
    return root, claude


async def _delegate(tmp_path: Path, agent: str | None) -> Delegating:
    root, claude = _repo(tmp_path)
    provider = Delegating(agent)
    context = ContextAssembler(root, tools=(), user_config_dir=tmp_path / "config", claude_home=claude,
                               cwd=root, base_instructions="You are the parent.")
    agents = AgentCatalog.discover(root, user_config_dir=tmp_path / "config", claude_home=claude)
    parent = Agent(AgentConfig(model="m"),
                   AgentParts(provider=provider, tools=with_agents(default_tools(), agents),
                              workspace=Workspace.at(root)), context=context)
    events = [e async for e in parent.run("audit")]
    assert isinstance(events[-1], Finished) and events[-1].result == "parent done"
    return provider


async def test_the_general_sub_agent_gets_the_instruction_files_and_the_path_rules(tmp_path: Path) -> None:
    provider = await _delegate(tmp_path, None)
    system = provider.child[0].system
    assert system.startswith(SUBAGENT_INSTRUCTIONS)
    assert system.index("USER-RULE") < system.index("PROJECT-RULE")
    assert "GEN-RULE" not in system and "You are the parent" not in system
    # The child touched gen/model.py: the rule comes with that result, in the child's conversation.
    result = provider.child[1].messages[-1].tool_results_parts[0].content
    assert "GEN-RULE: built by make" in result
    # The parent never touched it: its own conversation has no rule.
    assert "GEN-RULE" not in str([m.text for m in provider.parent[1].messages])


async def test_a_custom_agent_gets_its_body_then_the_instruction_files(tmp_path: Path) -> None:
    provider = await _delegate(tmp_path, "auditor")
    system = provider.child[0].system
    assert system.startswith("AUDITOR-BODY")
    assert "USER-RULE" in system and "PROJECT-RULE" in system and SUBAGENT_INSTRUCTIONS not in system
