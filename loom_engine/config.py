"""AgentConfig: the knobs of one agent (and of the sub-agents derived from it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .redact import Redactor

# A child's tools when ``inherit`` is given none. The Agent always passes the set it
# derives from its tools' declarations (``tools.base.subagent_tool_names``); this is the
# same set for the built-ins, for a configuration inherited without tools at hand (a test
# proves the two agree).
DEFAULT_SUBAGENT_TOOLS = ("read_file", "glob", "grep", "ls")


@dataclass(frozen=True)
class AgentConfig:
    model: str
    provider: str = "anthropic"
    max_turns: int = 100
    max_tokens: int = 8192
    max_budget_usd: float | None = None
    max_parallel_tools: int = 10
    tool_timeout_s: float = 600.0
    compact_threshold: float = 0.92
    context_window: int | None = None  # overrides the model table
    thinking_budget: int | None = None
    redact_secrets: bool = True
    # What redaction uses: built once with the exact API keys this Loom holds.
    redactor: Redactor = field(default_factory=Redactor, repr=False, compare=False)
    loop_guard: int = 4
    interactive: bool = True  # headless runs turn permission asks into denials
    depth: int = 0  # 0 for the main agent, 1.. for sub-agents
    max_depth: int = 2
    subagent_max_turns: int = 30
    # None: every tool the agent was given; otherwise only these.
    tool_names: tuple[str, ...] | None = None
    skill_names: tuple[str, ...] | None = None
    # The custom agent (``.loom/agents/NAME.md``...) a sub-agent runs as; None otherwise.
    agent_type: str | None = None

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        if not 0.1 <= self.compact_threshold <= 1.0:
            raise ValueError("compact_threshold must be between 0.1 and 1.0")

    def inherit(self, *, add_tools: tuple[str, ...] = (), remove_tools: tuple[str, ...] = (),
                tools: tuple[str, ...] | None = None, add_skills: tuple[str, ...] = (),
                remove_skills: tuple[str, ...] = (), skills: tuple[str, ...] | None = None,
                **changes: Any) -> AgentConfig:
        """A child's configuration: one level deeper, never wider than the parent.

        ``tools`` replaces the tool list (intersected with the parent's); ``add_tools``
        and ``remove_tools`` adjust it. A child can only have tools its parent has.
        ``skills`` likewise replaces the skill list, never wider than the parent's.
        """
        parent_tools = self.tool_names
        child_tools = tuple(tools) if tools is not None else DEFAULT_SUBAGENT_TOOLS
        child_tools = tuple(dict.fromkeys(child_tools + tuple(add_tools)))
        child_tools = tuple(t for t in child_tools if t not in remove_tools)
        if parent_tools is not None:
            child_tools = tuple(t for t in child_tools if t in parent_tools)
        skills_only = skills
        skills = self.skill_names
        if skills is not None or add_skills or remove_skills:
            base = tuple(skills or ()) + tuple(add_skills)
            skills = tuple(s for s in dict.fromkeys(base) if s not in remove_skills)
        if skills_only is not None:
            skills = tuple(s for s in dict.fromkeys(skills_only) if skills is None or s in skills)
        budget = self.max_budget_usd
        defaults: dict[str, Any] = dict(depth=self.depth + 1, tool_names=child_tools, skill_names=skills,
                        max_turns=min(self.subagent_max_turns, self.max_turns), max_budget_usd=budget,
                        agent_type=None)
        defaults.update(changes)
        return replace(self, **defaults)
