"""What the session's sandbox keeps read-only inside the workspace: Loom's own folders when
they lie there, and what project hooks run (the folders their trust covers, a script at the top)."""

from __future__ import annotations

import json
from pathlib import Path

from loom_cli.hook_setup import HookPlan, read_hook_plan
from loom_cli.sandbox_setup import read_only_in_workspace
from loom_cli.workspace_records import WorkspaceRecords


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _trusted_plan(root: Path, tmp_path: Path, *commands: str) -> HookPlan:
    entries = [{"type": "command", "command": command} for command in commands]
    _write(root / ".claude" / "settings.json",
           json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": entries}]}}))
    records = WorkspaceRecords(tmp_path / "data")
    user_config = tmp_path / "config" / "config.toml"
    first = read_hook_plan(root, user_config, records)
    records.trust_hooks(root, first.trust_keys(first.untrusted))
    plan = read_hook_plan(root, user_config, records)
    assert not plan.untrusted
    return plan


def test_loom_s_own_folders_are_protected_only_inside_the_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    inside, outside = home / ".config" / "loom", tmp_path / "elsewhere" / "data"
    for folder in (inside, outside):
        folder.mkdir(parents=True)
    assert read_only_in_workspace([home], [inside, outside], None) == (inside,)
    assert read_only_in_workspace([tmp_path / "repo"], [inside, outside], None) == ()


def test_a_trusted_hook_s_script_folder_and_settings_folder_are_protected(workspace: Path, tmp_path: Path) -> None:
    _write(workspace / "tools" / "hooks" / "guard.sh", "#!/bin/sh\nexit 0\n")
    _write(workspace / "lint.sh", "#!/bin/sh\nexit 0\n")
    plan = _trusted_plan(workspace, tmp_path, "sh tools/hooks/guard.sh", "sh ./lint.sh", "echo hi")
    assert read_only_in_workspace([workspace], [], plan) == (
        workspace / ".claude", workspace / ".claude" / "hooks", workspace / "tools" / "hooks", workspace / "lint.sh")


def test_an_untrusted_hook_s_folders_are_protected_too(workspace: Path, tmp_path: Path) -> None:
    """A yes at the next start would trust what a command wrote there."""
    _write(workspace / "tools" / "guard.sh", "#!/bin/sh\nexit 0\n")
    _write(workspace / ".claude" / "settings.json", json.dumps(
        {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "sh tools/guard.sh"}]}]}}))
    plan = read_hook_plan(workspace, tmp_path / "config" / "config.toml", WorkspaceRecords(tmp_path / "data"))
    assert plan.untrusted
    assert read_only_in_workspace([workspace], [], plan) == (workspace / ".claude" / "hooks", workspace / "tools")
