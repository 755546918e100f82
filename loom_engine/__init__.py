"""Loom's embeddable agent engine: the public API.

    from loom_engine import Agent, AgentConfig, Workspace, create_provider
    from builtin_tools import default_tools

    agent = Agent(config=AgentConfig(model="claude-sonnet-4-6"),
                  provider=create_provider("anthropic"),
                  tools=default_tools(), workspace=Workspace.at("."))
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
    "Workspace": "loom_engine.workspace",
    "EventBus": "loom_engine.bus",
    "CancelToken": "loom_engine.execution",
    "Message": "loom_engine.messages",
    "Usage": "loom_engine.usage",
    # events
    "AgentEvent": "loom_engine.events",
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


if TYPE_CHECKING:  # what type checkers and IDEs see
    from .agent import Agent
    from .bus import EventBus
    from .config import AgentConfig
    from .events import (
        TERMINAL_EVENTS,
        Aborted,
        AgentEvent,
        AssistantMessage,
        BudgetExceeded,
        CompactionApplied,
        Error,
        Finished,
        MaxTurnsReached,
        Notice,
        PermissionAnswered,
        PermissionRequested,
        Retrying,
        TextDelta,
        ThinkingDelta,
        TodosUpdated,
        ToolCallStarted,
        ToolFinished,
        ToolProgress,
        TurnStarted,
        UsageUpdated,
    )
    from .execution import CancelToken
    from .messages import Message
    from .permissions.answer import PermissionAnswer
    from .permissions.manager import PermissionManager
    from .providers.factory import create_provider
    from .providers.scripted import ScriptedProvider
    from .tools.base import BaseTool, Tool, ToolContext, ToolError, ToolOutput
    from .tools.function_tool import tool
    from .usage import Usage
    from .workspace import Workspace
