"""What every worker of a batch needs besides its task: one picklable value, sent once to
each local worker process (or with each Ray task), never read from the driver's globals."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loom_engine.permissions.modes import PermissionMode
from loom_engine.sandbox.config import SandboxMode
from loom_engine.usage_wait import UsageLimitPolicy

# The environment a worker must see as the driver does: Loom's own folders and settings, the
# providers' endpoints and keys, Claude Code's folder. A local worker inherits them anyway; a
# worker on another machine (Ray) gets them from here.
_PASSED_PREFIXES = ("LOOM_", "ANTHROPIC_", "OPENAI_", "CLAUDE_")


@dataclass(frozen=True)
class BatchDefaults:
    """The batch's flags, as `loom run` takes them; a task's own value beats its field."""

    provider: str | None = None
    model: str | None = None
    max_turns: int | None = None
    # A task's cap when it names none: what is left of the batch's --max-budget-usd when the
    # batch starts (no task alone spends more than the whole batch may).
    max_budget_usd: float | None = None
    permission_mode: PermissionMode | None = None
    sandbox: SandboxMode | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    trust_project: bool = False
    # A batch waits for a usage limit to reset by default: no one is there to start it again.
    usage_limits: UsageLimitPolicy = field(default_factory=lambda: UsageLimitPolicy(wait=True))


@dataclass(frozen=True)
class BatchJob:
    out_dir: Path  # absolute: DIR of `--out DIR`; workers write only DIR/diffs/<id>.diff there
    defaults: BatchDefaults = field(default_factory=BatchDefaults)
    keep_worktrees: bool = False
    # Set in the worker before each task (see _PASSED_PREFIXES); names and values.
    environment: tuple[tuple[str, str], ...] = ()

    def apply_environment(self) -> None:
        """The driver's environment in this worker (a no-op where it was inherited)."""
        os.environ.update(dict(self.environment))


def passed_environment(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """What of ``environ`` a worker must see (names sorted, for a stable job)."""
    return tuple(sorted((name, value) for name, value in environ.items() if name.startswith(_PASSED_PREFIXES)))
