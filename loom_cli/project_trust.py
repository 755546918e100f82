"""Which parts of a project's settings files need the user's trust.

A cloned repository can ship ``.loom/settings.toml`` and ``.loom/settings.local.toml``.
Until the user trusts the workspace, those files may only narrow what Loom does: deny and
ask rules, a stricter permission mode, fewer turns, redaction on. Everything else —
allow rules, a looser mode, provider endpoints, redaction off, and any key this module
does not know (whatever is added later starts out untrusted) — is a *change* that is left
out and named until the user trusts exactly that set of changes (remembered by
:func:`changes_hash`).

Hooks are not in that set: trusting a workspace's settings must not also run the commands
its files name, so each project hook is trusted on its own, by its entry's hash
(:mod:`loom_cli.hook_setup`), and a new or changed hook asks again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loom_engine.permissions.modes import is_wider

if TYPE_CHECKING:
    from .settings import Settings

# Keys that neither widen permissions nor send anything anywhere new.
_NEUTRAL = frozenset({"provider", "model", "max_tokens", "compact_threshold", "context_window",
                      "thinking_budget", "stream_first_byte_timeout", "stream_idle_timeout"})


@dataclass(frozen=True)
class ProjectChange:
    """One thing a project file would widen or redirect."""

    source: str  # ".loom/settings.toml"
    key: str  # "permission_mode", "permissions.allow", "anthropic.base_url"
    value: Any

    def describe(self) -> str:
        if self.key == "permissions.allow":
            return f"allow rule {json.dumps(self.value)}"
        if self.key.endswith(".base_url"):
            return f"{self.key} = {json.dumps(self.value)}"
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


def changes_hash(changes: Sequence[ProjectChange]) -> str:
    """What the user trusts: the exact set of changes, in a canonical form."""
    canonical = json.dumps([[c.source, c.key, c.value] for c in changes], sort_keys=True,
                           separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def ignored_line(changes: Sequence[ProjectChange]) -> str:
    """One line naming what was left out, file by file (for stderr and the chat)."""
    by_source: dict[str, list[str]] = {}
    for change in changes:
        by_source.setdefault(change.source, []).append(change.describe())
    return "; ".join(f"{source}: {', '.join(items)}" for source, items in by_source.items())
