"""Building a sub-agent from its parent: what the child shares and what it narrows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import AgentConfig
from ..turn_state import TurnState

if TYPE_CHECKING:
    from ..agent import Agent
    from ..providers.base import Provider
    from .definitions import AgentDefinition


def make_child(parent: Agent, config: AgentConfig, parent_call_id: str,
               definition: AgentDefinition | None = None) -> Agent:
    """The child agent. It shares the parent's bus, tools (narrowed by ``config``), hooks,
    snapshots and skills; its permission rules are the parent's, followed live, and a
    custom agent's mode can only narrow the parent's. A custom agent's body is its system
    prompt; a model of another vendor gets that vendor's provider. Its commands run in
    the parent's sandbox."""
    from ..context.prompts import SUBAGENT_INSTRUCTIONS

    mode = definition.permission_mode if definition is not None else None
    agent_class = type(parent)  # the child is an agent of the parent's own kind
    return agent_class(config=config, provider=_provider(parent, config), tools=list(parent.registry),
                 workspace=parent.workspace,
                 permissions=parent.permissions.child(mode) if parent.permissions is not None else None,
                 skills=parent.skills, context=None,
                 system_prompt=definition.prompt if definition is not None else SUBAGENT_INSTRUCTIONS,
                 bus=parent.bus, retry_policy=parent.client.retry_policy, parent_tool_use_id=parent_call_id,
                 turn_state=TurnState.initial(parent_turn_id=parent.turn_state.turn_id),
                 make_provider=parent.make_provider, checkpoints=parent.checkpoints, hooks=parent.hooks,
                 sandbox=parent.sandbox)


def _provider(parent: Agent, config: AgentConfig) -> Provider:
    if config.provider == parent.config.provider:
        return parent.provider
    if parent.make_provider is None:
        raise ValueError(f"the {config.provider} provider is not available here")
    return parent.make_provider(config.provider)
