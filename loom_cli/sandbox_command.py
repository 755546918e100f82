"""`loom sandbox`: the sandbox a session started here would get, without starting one."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .sandbox_report import SandboxFacts


@dataclass(frozen=True)
class SandboxReport:
    facts: SandboxFacts
    # One line each, for stderr: what a project's settings tried to open up (never applied).
    warnings: tuple[str, ...] = ()


def describe_sandbox(cwd: Path) -> SandboxReport:
    """Reads the settings as a session would (user config, project files, LOOM_SANDBOX),
    opens the sandbox — which probes this machine — and closes it again.
    A settings file that is not valid raises :class:`~loom_cli.settings.ConfigError`."""
    from loom_engine.paths import data_dir, user_config_file
    from loom_engine.workspace import Workspace, find_workspace_root

    from .hook_setup import plan_hooks
    from .sandbox_settings import read_denials, refused_line
    from .sandbox_setup import facts_of, open_session_sandbox
    from .settings import DEFAULT_SOURCE, load_settings
    from .workspace_records import WorkspaceRecords

    root = find_workspace_root(cwd)
    records = WorkspaceRecords(data_dir())
    loaded = load_settings(root, user_config_file(), trusted_hash=records.trusted_hash(root))
    hooks = plan_hooks(root, loaded.files, records.trusted_hooks(root))
    denials = read_denials((text for rules in loaded.rules for text in rules.deny), root, home=Path.home())
    sandbox = open_session_sandbox(loaded.settings.sandbox, Workspace.at(root), hooks, denials=denials)
    try:
        facts = facts_of(sandbox, loaded.sources.get("sandbox.mode", DEFAULT_SOURCE))
    finally:
        sandbox.close()
    if denials.note():
        facts = replace(facts, notes=(*facts.notes, denials.note()))
    return SandboxReport(facts, (refused_line(loaded.refused),) if loaded.refused else ())
