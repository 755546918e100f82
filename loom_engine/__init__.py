"""Loom's embeddable agent engine: the public API.

    from loom_engine import Agent, AgentConfig, AgentParts, Workspace, create_provider
    from builtin_tools import default_tools

    agent = Agent(AgentConfig(model="claude-sonnet-4-6"),
                  AgentParts(provider=create_provider("anthropic"), tools=default_tools(),
                             workspace=Workspace.at(".")))
    async for event in agent.run("what does main.py do?"):
        ...

Everything listed in ``__all__`` is supported for embedding; other modules are the
engine's own and may change. Names load on first use, so that importing one engine
module (as the CLI does at start-up) does not import the whole engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Agent": "loom_engine.agent",
    "AgentConfig": "loom_engine.config",
    "AgentParts": "loom_engine.parts",
    "Workspace": "loom_engine.workspace",
    "EventBus": "loom_engine.bus",
    "CancelToken": "loom_engine.execution",
    "Message": "loom_engine.messages",
    "UserPrompt": "loom_engine.attachments",
    "Usage": "loom_engine.usage",
    # events
    "AgentEvent": "loom_engine.events",
    "Event": "loom_engine.events",
    "is_event": "loom_engine.events",
    "TurnStarted": "loom_engine.events",
    "TextDelta": "loom_engine.events",
    "ThinkingDelta": "loom_engine.events",
    "AssistantMessage": "loom_engine.events",
    "ToolCallStarted": "loom_engine.events",
    "ToolProgress": "loom_engine.events",
    "ToolFinished": "loom_engine.events",
    "PermissionRequested": "loom_engine.events",
    "PermissionAnswered": "loom_engine.events",
    "TodosUpdated": "loom_engine.events",
    "CompactionApplied": "loom_engine.events",
    "UsageUpdated": "loom_engine.events",
    "Retrying": "loom_engine.events",
    "Notice": "loom_engine.events",
    "HookRan": "loom_engine.events",
    "Finished": "loom_engine.events",
    "MaxTurnsReached": "loom_engine.events",
    "BudgetExceeded": "loom_engine.events",
    "Aborted": "loom_engine.events",
    "Error": "loom_engine.events",
    "TERMINAL_EVENTS": "loom_engine.events",
    # tools
    "tool": "loom_engine.tools.function_tool",
    "BaseTool": "loom_engine.tools.base",
    "Tool": "loom_engine.tools.base",
    "ToolContext": "loom_engine.tools.base",
    "ToolOutput": "loom_engine.tools.base",
    "ToolError": "loom_engine.tools.base",
    # permissions
    "PermissionManager": "loom_engine.permissions.manager",
    "PermissionAnswer": "loom_engine.permissions.answer",
    # the OS sandbox commands run in
    "Sandbox": "loom_engine.sandbox.sandbox",
    "SandboxConfig": "loom_engine.sandbox.config",
    "open_sandbox": "loom_engine.sandbox.sandbox",
    # providers
    "create_provider": "loom_engine.providers.factory",
    "ScriptedProvider": "loom_engine.providers.scripted",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'loom_engine' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see (`X as X` marks a re-export)
    from .agent import Agent as Agent
    from .attachments import UserPrompt as UserPrompt
    from .bus import EventBus as EventBus
    from .config import AgentConfig as AgentConfig
    from .events import (
        TERMINAL_EVENTS as TERMINAL_EVENTS,
    )
    from .events import (
        Aborted as Aborted,
    )
    from .events import (
        AgentEvent as AgentEvent,
    )
    from .events import (
        AssistantMessage as AssistantMessage,
    )
    from .events import (
        BudgetExceeded as BudgetExceeded,
    )
    from .events import (
        CompactionApplied as CompactionApplied,
    )
    from .events import (
        Error as Error,
    )
    from .events import (
        Event as Event,
    )
    from .events import (
        Finished as Finished,
    )
    from .events import (
        HookRan as HookRan,
    )
    from .events import (
        MaxTurnsReached as MaxTurnsReached,
    )
    from .events import (
        Notice as Notice,
    )
    from .events import (
        PermissionAnswered as PermissionAnswered,
    )
    from .events import (
        PermissionRequested as PermissionRequested,
    )
    from .events import (
        Retrying as Retrying,
    )
    from .events import (
        TextDelta as TextDelta,
    )
    from .events import (
        ThinkingDelta as ThinkingDelta,
    )
    from .events import (
        TodosUpdated as TodosUpdated,
    )
    from .events import (
        ToolCallStarted as ToolCallStarted,
    )
    from .events import (
        ToolFinished as ToolFinished,
    )
    from .events import (
        ToolProgress as ToolProgress,
    )
    from .events import (
        TurnStarted as TurnStarted,
    )
    from .events import (
        UsageUpdated as UsageUpdated,
    )
    from .events import (
        is_event as is_event,
    )
    from .execution import CancelToken as CancelToken
    from .messages import Message as Message
    from .parts import AgentParts as AgentParts
    from .permissions.answer import PermissionAnswer as PermissionAnswer
    from .permissions.manager import PermissionManager as PermissionManager
    from .providers.factory import create_provider as create_provider
    from .providers.scripted import ScriptedProvider as ScriptedProvider
    from .sandbox.config import SandboxConfig as SandboxConfig
    from .sandbox.sandbox import Sandbox as Sandbox
    from .sandbox.sandbox import open_sandbox as open_sandbox
    from .tools.base import BaseTool as BaseTool
    from .tools.base import Tool as Tool
    from .tools.base import ToolContext as ToolContext
    from .tools.base import ToolError as ToolError
    from .tools.base import ToolOutput as ToolOutput
    from .tools.function_tool import tool as tool
    from .usage import Usage as Usage
    from .workspace import Workspace as Workspace
