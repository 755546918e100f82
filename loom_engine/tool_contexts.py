"""What each tool call's :class:`ToolContext` is made of, as one object a run is given.

The agent makes a :class:`ToolContextFactory` per run (its tool session state is
replaced on ``/clear``); the run adds what is its own (the cancel token, where events
go, the ids they carry) when a call needs a context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .events import AgentEvent, ToolProgress
from .tools.base import ReadRules, ToolContext, ToolOutput, ToolSessionState

if TYPE_CHECKING:
    from .execution import CancelToken
    from .memory.entries import MemoryStore, Scope
    from .sandbox.sandbox import Sandbox
    from .skills.catalog import SkillCatalog
    from .subagents.definitions import AgentDefinition
    from .tools.io import CommandRunner, FileAccess
    from .workspace import Workspace


class SubagentRunner(Protocol):
    """Runs a child agent to completion for a ``task`` call (``Agent.run_subagent``)."""

    async def __call__(self, *, description: str, prompt: str, tools: Sequence[str] | None,
                       parent_call_id: str, cancel: CancelToken, emit: Callable[[AgentEvent], None],
                       agent: AgentDefinition | None = None) -> ToolOutput: ...


@dataclass(frozen=True)
class ToolContextFactory:
    workspace: Workspace
    state: ToolSessionState
    skills: SkillCatalog | None
    sandbox: Sandbox | None
    read_rules: ReadRules | None
    run_subagent: SubagentRunner
    session_id: str | None = None
    files: FileAccess | None = None
    commands: CommandRunner | None = None
    # This agent's memory scopes (see loom_engine/memory); None: no memory.
    memory_scopes: Mapping[Scope, MemoryStore] | None = None

    def make(self, call_id: str, *, cancel: CancelToken, emit: Callable[[AgentEvent], None],
             stamp: Callable[[], Mapping[str, Any]], command_env: Mapping[str, str] | None = None) -> ToolContext:
        """The context of call ``call_id`` of a run whose token is ``cancel``."""

        def progress(text: str) -> None:
            emit(ToolProgress(call_id=call_id, text=text, **stamp()))

        async def spawn(*, description: str, prompt: str, tools: Sequence[str] | None,
                        agent: AgentDefinition | None = None) -> ToolOutput:
            return await self.run_subagent(description=description, prompt=prompt, tools=tools,
                                           parent_call_id=call_id, cancel=cancel, emit=emit, agent=agent)

        return ToolContext(workspace=self.workspace, cancel=cancel, state=self.state, call_id=call_id,
                           progress=progress, emit=emit, skills=self.skills, spawn_subagent=spawn,
                           sandbox=self.sandbox, read_rules=self.read_rules, command_env=command_env or {},
                           session_id=self.session_id, files=self.files, commands=self.commands,
                           memory_scopes=self.memory_scopes)
