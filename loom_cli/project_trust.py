"""Which parts of a project's settings files need the user's trust.

A cloned repository can ship ``.loom/settings.toml`` and ``.loom/settings.local.toml`` (and
Claude Code's ``.claude/settings.json`` and ``.claude/settings.local.json``, read into the
same shape by :mod:`.claude_settings`). Until the user trusts the workspace, those files
may only narrow what Loom does: deny and ask rules, a stricter permission mode, fewer
turns, redaction on. Everything else — allow rules, a looser mode, more folders, provider
endpoints, the provider and the model (a model costs money, another vendor gets the
work), redaction off, and any key this module does not know (whatever is added later
starts out untrusted) — is a *change* that is left out and named until the user trusts
exactly that set of changes (remembered by :func:`changes_hash`). A project agent file's
``model`` is one more change of the same set (:func:`agent_model_changes`): untrusted, the
agent runs on the session's provider and model.

Hooks are not in that set: trusting a workspace's settings must not also run the commands
its files name, so each project hook is trusted on its own, by its entry's hash
(:mod:`loom_cli.hook_setup`), and a new or changed hook asks again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.permissions.modes import is_wider

if TYPE_CHECKING:
    from .settings import Settings

# Keys that neither widen permissions nor send anything anywhere new.
_NEUTRAL = frozenset({"max_tokens", "compact_threshold", "context_window",
                      "thinking_budget", "stream_first_byte_timeout", "stream_idle_timeout"})
# Keys a project may repeat (the same value as the settings before it) but not change.
_CHOICES = frozenset({"provider", "model"})
# Folders a Claude Code file adds (absolute paths): not a Loom setting to merge, so the
# settings loader applies them apart (LoadedSettings.add_dirs).
ADD_DIRS_KEY = "add_dirs"
# A project agent's model: ``agents.<name>.model``, its source the agent file.
_AGENT_PREFIX, _AGENT_SUFFIX = "agents.", ".model"


@dataclass(frozen=True)
class ProjectChange:
    """One thing a project file would widen or redirect."""

    source: str  # ".loom/settings.toml"
    key: str  # "permission_mode", "permissions.allow", "anthropic.base_url"
    value: Any

    @property
    def agent(self) -> str | None:
        """The agent's name when this is a project agent's model, else None."""
        if self.key.startswith(_AGENT_PREFIX) and self.key.endswith(_AGENT_SUFFIX):
            return self.key[len(_AGENT_PREFIX):-len(_AGENT_SUFFIX)]
        return None

    def describe(self, *, ignored: bool = False) -> str:
        """The change in the user's words; ``ignored`` adds what is used instead where that
        is not plain (an agent runs on the session's model)."""
        if self.key == "permissions.allow":
            return f"allow rule {json.dumps(self.value)}"
        if self.key == ADD_DIRS_KEY:
            return f"additional directory {json.dumps(self.value)}"
        if self.agent is not None:
            from loom_engine.providers.models import lookup

            vendor = lookup(str(self.value)).provider
            notes = ([vendor] if vendor != "unknown" else []) + (["the session's model is used"] if ignored else [])
            shown = f" ({'; '.join(notes)})" if notes else ""
            return f"agent {self.agent}: model {json.dumps(self.value)}{shown}"
        return f"{self.key} = {json.dumps(self.value, default=str)}"

    def as_data(self) -> dict[str, Any]:
        """The change as a settings-file fragment, to merge when trusted."""
        head, _, tail = self.key.partition(".")
        return {head: {tail: self.value}} if tail else {head: self.value}


def split_project_file(data: Mapping[str, Any], base: Settings, source: str
                       ) -> tuple[dict[str, Any], list[ProjectChange]]:
    """(what is always applied, what needs trust) of one project file, against ``base``:
    the settings from the files before it."""
    narrowing: dict[str, Any] = {}
    changes: list[ProjectChange] = []
    for key, value in data.items():
        if key == "hooks":
            continue  # trusted per entry, never with the rest (see the module's text)
        if key in _NEUTRAL:
            narrowing[key] = value
        elif key in _CHOICES:
            if value == getattr(base, key):
                narrowing[key] = value
            else:
                changes.append(ProjectChange(source, key, value))
        elif key == ADD_DIRS_KEY:
            changes.extend(ProjectChange(source, key, folder) for folder in value)
        elif key == "permission_mode":
            if not is_wider(value, than=base.permission_mode):  # a project may only narrow it
                narrowing[key] = value
            else:
                changes.append(ProjectChange(source, key, value))
        elif key == "max_turns":
            if value <= base.max_turns:
                narrowing[key] = value
            else:
                changes.append(ProjectChange(source, key, value))
        elif key == "redact_secrets":
            if value:
                narrowing[key] = value
            else:
                changes.append(ProjectChange(source, key, value))
        elif key == "permissions":
            kept = {k: v for k, v in value.items() if k in ("deny", "ask")}
            narrowing[key] = kept
            changes.extend(ProjectChange(source, "permissions.allow", rule) for rule in value.get("allow", ()))
        elif isinstance(value, dict):  # [anthropic] / [openai] and anything added later
            changes.extend(ProjectChange(source, f"{key}.{sub}", sub_value) for sub, sub_value in value.items())
        else:
            changes.append(ProjectChange(source, key, value))
    return narrowing, changes


def agent_model_changes(workspace: Path) -> list[ProjectChange]:
    """The model each project agent file names (``.claude/agents/``, ``.loom/agents/``; a
    user's own agent file is not the project's): one change each, its source the file."""
    from loom_engine.subagents.definitions import AgentCatalog

    return [ProjectChange(agent.path.relative_to(workspace).as_posix(),
                          f"{_AGENT_PREFIX}{agent.name}{_AGENT_SUFFIX}", agent.model)
            for agent in AgentCatalog.discover(workspace, user_config_dir=None) if agent.model is not None]


def trusted_agent_models(workspace: Path, changes: Sequence[ProjectChange]) -> frozenset[tuple[Path, str]]:
    """(agent file, model) of each project agent's model among ``changes`` (those trusted)."""
    return frozenset((workspace / change.source, str(change.value)) for change in changes if change.agent is not None)


def changes_hash(changes: Sequence[ProjectChange]) -> str:
    """What the user trusts: the exact set of changes, in a canonical form."""
    canonical = json.dumps([[c.source, c.key, c.value] for c in changes], sort_keys=True,
                           separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def ignored_line(changes: Sequence[ProjectChange]) -> str:
    """One line naming what was left out, file by file (for stderr and the chat)."""
    by_source: dict[str, list[str]] = {}
    for change in changes:
        by_source.setdefault(change.source, []).append(change.describe(ignored=True))
    return "; ".join(f"{source}: {', '.join(items)}" for source, items in by_source.items())
