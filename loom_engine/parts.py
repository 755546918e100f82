"""AgentParts: the collaborators an agent is built from.

    parts = AgentParts(provider=create_provider("anthropic"), tools=default_tools(),
                       workspace=Workspace.at("."))
    agent = Agent(AgentConfig(model="claude-sonnet-4-6"), parts)

An agent's own identity and history (its id, session, messages, turn state, system
prompt) are not parts: they are given to :class:`~loom_engine.agent.Agent` beside them.
A sub-agent is built from its parent's parts, narrowed (:meth:`AgentParts.for_child`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .bus import EventBus
from .hooks.config import HookSet
from .providers.breaker import CircuitBreakers

if TYPE_CHECKING:
    from .checkpoints import Checkpoints
    from .config import AgentConfig
    from .context.compaction import BeforeCompaction
    from .memory.entries import MemoryStore, Scope
    from .permissions.manager import PermissionManager
    from .providers.base import Provider
    from .providers.retry import RetryPolicy
    from .providers.server_window import ServerWindows
    from .sandbox.sandbox import Sandbox
    from .skills.catalog import SkillCatalog
    from .subagents.definitions import AgentDefinition
    from .subagents.spawn import MakeProvider
    from .telemetry.observer import RunObserver
    from .tools.base import Tool
    from .tools.io import CommandRunner, FileAccess
    from .tools.source import ToolSource
    from .usage_wait import UsageLimitWaiter
    from .workspace import Workspace


@dataclass(frozen=True)
class AgentParts:
    """What an agent works with; a sub-agent shares them (narrowed), so one object carries them."""

    provider: Provider
    workspace: Workspace
    # The tools given first, in their order (a sequence given is kept as a tuple).
    tools: Sequence[Tool[Any]] = ()
    # Tools that join later (MCP servers'): read at each turn boundary.
    tool_source: ToolSource | None = None
    # None: every call is allowed (no rules, no questions).
    permissions: PermissionManager | None = None
    skills: SkillCatalog | None = None
    bus: EventBus = field(default_factory=EventBus)
    retry_policy: RetryPolicy | None = None
    # Whether a request that hit a usage limit waits for the reset (shared with
    # sub-agents); None: it does not, the run ends with the error.
    usage_limits: UsageLimitWaiter | None = None
    # One circuit breaker per provider endpoint, shared with every sub-agent: a dead
    # server is not sent a round of retries by each of them.
    breakers: CircuitBreakers = field(default_factory=CircuitBreakers)
    # Builds another provider by name, for a sub-agent whose model is another vendor's.
    make_provider: MakeProvider | None = None
    # Workspace snapshots for rewind (shared with sub-agents); None: none taken.
    checkpoints: Checkpoints | None = None
    # The hook commands in force (already filtered for trust by the caller).
    hooks: HookSet = field(default_factory=HookSet)
    # The OS sandbox every command runs in (bash, project hooks, a command's `!cmd`);
    # None: commands run unconfined.
    sandbox: Sandbox | None = None
    # The context windows a custom server says it runs its models with (shared with
    # sub-agents; a model it was not asked about falls back to the model table).
    server_windows: ServerWindows | None = None
    # Watches the runs (telemetry), shared with sub-agents; None: nothing watches.
    observer: RunObserver | None = None
    # Where the built-in tools read and write files and run commands (an editor's,
    # over ACP; shared with sub-agents); None: Loom's own (see tools/io.py).
    files: FileAccess | None = None
    commands: CommandRunner | None = None
    # The project's long-term memory (the ``global`` scope; shared with sub-agents); None: none.
    memory: MemoryStore | None = None
    # Reads the history before a compaction summarises it (memory promotion); None: nothing does.
    before_compaction: BeforeCompaction | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tools, tuple):  # frozen all the way down
            object.__setattr__(self, "tools", tuple(self.tools))

    def global_memory(self) -> Mapping[Scope, MemoryStore] | None:
        """The ``global`` scope for a tool call's memory scopes (beside the tree's)."""
        from .memory.entries import Scope

        return {Scope.GLOBAL: self.memory} if self.memory is not None else None

    def for_child(self, config: AgentConfig, definition: AgentDefinition | None, *, vendor: str) -> AgentParts:
        """A sub-agent's parts. It shares the bus, hooks, snapshots, skills, sandbox and
        circuit breakers;
        its tools are these (and the source's, as they are now) narrowed to ``config``'s;
        its permission rules are these, followed live, and a custom agent's mode can only
        narrow them; a model of another vendor than ``vendor`` (the parent's) gets that
        vendor's provider. Raises ValueError (or ProviderError) when it cannot be built."""
        available = (*self.tools, *(self.tool_source.tools() if self.tool_source is not None else ()))
        wanted = config.tool_names
        tools = available if wanted is None else tuple(t for t in available if t.name in wanted)
        mode = definition.permission_mode if definition is not None else None
        return replace(self, provider=self._provider_for(config.provider, vendor), tools=tools, tool_source=None,
                       permissions=self.permissions.child(mode) if self.permissions is not None else None,
                       # another vendor's provider talks to another server
                       server_windows=self.server_windows if config.provider == vendor else None)

    def _provider_for(self, wanted: str, vendor: str) -> Provider:
        if wanted == vendor:
            return self.provider
        if self.make_provider is None:
            raise ValueError(f"the {wanted} provider is not available here")
        return self.make_provider(wanted)
