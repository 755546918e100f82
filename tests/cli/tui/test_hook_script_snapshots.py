"""Snapshot tests (pytest-textual-snapshot) of the question about a project's hooks when they
run workspace scripts, at 120 and 60 columns: each script named under its hook with the
folders its trust covers, one that cannot be read or a folder too big to remember said so.

Update the stored SVGs after an intended visual change with `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App

from loom_cli.hook_trust import HookTrust
from loom_cli.project_additions import ProjectAdditions
from loom_cli.tui.trust_screen import ProjectTrustScreen
from loom_engine.hooks.config import HookCommand

GUARD = HookCommand(event="PreToolUse", matcher="Bash", command='"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
                    timeout_s=5.0, source=".claude/settings.json", in_project=True)
FORMAT = HookCommand(event="PostToolUse", matcher="Write|Edit", command="python3 .claude/hooks/fmt.py",
                     args=("--config", "tools/fmt.toml"), source=".claude/settings.json", in_project=True)
LINT = HookCommand(event="Stop", matcher="", command="./scripts/lint.sh", source=".loom/settings.toml",
                   in_project=True)
CHECKS = HookCommand(event="Stop", matcher="", command="python3 -m checks.all", source=".loom/settings.toml",
                     in_project=True)
TRUST = {GUARD: HookTrust("k1", (".claude/hooks/guard.sh",), remembers=("everything in .claude/hooks/",)),
         FORMAT: HookTrust("k2", (".claude/hooks/fmt.py", "tools/fmt.toml"),
                           remembers=("everything in .claude/hooks/", "everything in tools/")),
         LINT: HookTrust(None, ("scripts/lint.sh",), ("scripts/lint.sh",)),
         CHECKS: HookTrust(None, too_big=("checks",))}


class Host(App[None]):
    """An empty chat under the question."""

    def __init__(self, screen: ProjectTrustScreen) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


@pytest.mark.parametrize("width", [120, 60])
def test_question_names_the_scripts(snap_compare, width: int) -> None:
    screen = ProjectTrustScreen(ProjectAdditions(Path("/home/dev/shop"), hooks=(GUARD, FORMAT, LINT, CHECKS),
                                                 hook_trust=TRUST), guard_s=0.0)
    assert snap_compare(Host(screen), terminal_size=(width, 36))
