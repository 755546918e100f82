"""`loom config`: where things live, and each effective setting with where it came from."""

from __future__ import annotations

from pathlib import Path

from .claude_folder import find_claude_home
from .claude_home import SETTINGS_NAME, claude_home_line
from .project_trust import ADD_DIRS_KEY
from .settings import DEFAULT_SOURCE, LoadedSettings, choose_provider, load_settings, settings_files
from .window_setup import window_line
from .workspace_records import SAVED_RULES_SOURCE, WorkspaceRecords

IGNORED = "ignored (workspace not trusted)"
NEVER = "ignored: a project cannot turn the sandbox off or widen it"


def config_report(workspace: Path, user_config_file: Path, *, config_dir: Path, data_dir: Path,
                  sessions_dir: Path) -> list[str]:
    records = WorkspaceRecords(data_dir)
    loaded = load_settings(workspace, user_config_file, trusted_hash=records.trusted_hash(workspace))
    home = find_claude_home(user_config_file)
    lines = [f"workspace:     {workspace}", f"config dir:    {config_dir}", f"sessions dir:  {sessions_dir}",
             f"trust records: {records.path}", f"claude folder: {claude_home_line(home)}",
             "settings files (later wins):"]
    files = settings_files(workspace, user_config_file)
    yours = [*((home / SETTINGS_NAME,) if home is not None else ()), files[0]]  # files[0]: config.toml
    for path in [*yours, *files[1:]]:
        note = "" if path in yours else "  (in the project: widening settings need trust)"
        lines.append(f"  {'found  ' if path.exists() else 'missing'} {path}{note}")
    lines += [f"  warning: {problem}" for problem in loaded.problems]
    lines += instruction_lines(workspace, config_dir, home)
    lines.append(f"workspace trust: {_trust_state(loaded)}")
    lines += [f"  problem: {problem}" for problem in loaded.problems]
    lines.append("effective settings:")
    lines += _settings_lines(loaded)
    lines.append(window_line(loaded.settings, choose_provider(loaded.settings, None)))
    lines.append("permission rules (deny beats ask beats allow):")
    rules = [(behavior, rule, rule_set.source) for rule_set in loaded.rules
             for behavior, texts in (("deny", rule_set.deny), ("ask", rule_set.ask), ("allow", rule_set.allow))
             for rule in texts]
    rules += [("allow", rule, SAVED_RULES_SOURCE) for rule in records.saved_rules(workspace)]
    rules += [("allow", str(c.value), c.source + ", " + IGNORED) for c in loaded.ignored
              if c.key == "permissions.allow"]
    lines += [f"  {behavior:<5} {rule:<40} ({source})" for behavior, rule, source in rules] or ["  none"]
    folders = [(str(folder), "trusted project settings" if folder not in loaded.user_dirs else "your settings")
               for folder in loaded.add_dirs]
    folders += [(str(c.value), f"{c.source}, {IGNORED}") for c in loaded.ignored if c.key == ADD_DIRS_KEY]
    if folders:
        lines.append("additional directories:")
        lines += [f"  {folder}  ({source})" for folder, source in folders]
    return lines


def instruction_lines(workspace: Path, config_dir: Path, home: Path | None, cwd: Path | None = None) -> list[str]:
    """The instruction files the model would get here, in prompt order, and the rules."""
    from loom_engine.context.instructions import RULES_DIR, UserFolders, find_instructions, read_rules

    folders = UserFolders(loom=config_dir, claude=home)
    files, warnings = find_instructions(workspace, cwd or Path.cwd(), user_folders=folders)
    rule_folders = [*((home / "rules",) if home is not None else ()), workspace / RULES_DIR]
    rules = read_rules(rule_folders, allowed=[workspace, *(f for f in (home, config_dir) if f)], warnings=warnings)
    lines = ["instruction files (in prompt order):"]
    lines += [f"  {found.path}  ({found.kind})" for found in files] or ["  none"]
    lines += [f"  {rule.path}  (rule{', when a file matches ' + ', '.join(rule.globs) if rule.globs else ''})"
              for rule in rules]
    lines += [f"  warning: {warning}" for warning in warnings]
    return lines


def _trust_state(loaded: LoadedSettings) -> str:
    if not loaded.widening:
        return "nothing to trust (the project's settings only narrow)"
    if loaded.trusted:
        return "trusted (the project's settings apply as they are now)"
    return (f"not trusted: {len(loaded.widening)} widening setting(s) ignored; `loom` asks to trust them, "
            "`loom run --trust-project` uses them for one run")


def _settings_lines(loaded: LoadedSettings) -> list[str]:
    data = loaded.settings.model_dump(exclude={"permissions"})
    rows: list[tuple[str, object, str]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            rows += [(f"{key}.{sub}", sub_value, loaded.sources.get(f"{key}.{sub}", DEFAULT_SOURCE))
                     for sub, sub_value in value.items()]
        elif key == "provider" and "provider" not in loaded.sources:
            rows.append((key, choose_provider(loaded.settings, None), "chosen from the environment's keys"))
        else:
            rows.append((key, value, loaded.sources.get(key, DEFAULT_SOURCE)))
    lines = [f"  {key} = {value!r}  ({source})" for key, value, source in rows]
    lines += [f"  {c.describe(ignored=True) if c.agent is not None else f'{c.key} = {c.value!r}'}  "
              f"({c.source}, {IGNORED})" for c in loaded.ignored if c.key not in ("permissions.allow", ADD_DIRS_KEY)]
    lines += [f"  {c.key} = {c.value!r}  ({c.source}, {NEVER})" for c in loaded.refused]
    lines.append("  (sandbox.deny_read adds to the default unreadable paths, ~/.ssh and the like and Loom's own "
                 "folders; `loom sandbox` lists every one)")
    return lines
