"""Snapshot tests (pytest-textual-snapshot) of hooks in the chat at 120 and 60 columns: the
start-up question about what a project adds (its hooks among its settings and servers),
`/hooks`, and a hook's run in the transcript.

Update the stored SVGs after an intended visual change with `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from loom_cli.hook_setup import HookPlan
from loom_cli.project_additions import ProjectAdditions
from loom_cli.project_trust import ProjectChange
from loom_cli.tui.hook_view import show_hook_ran
from loom_cli.tui.hooks_screen import HooksScreen
from loom_cli.tui.tool_block import ToolCallData
from loom_cli.tui.transcript import Transcript
from loom_cli.tui.trust_screen import ProjectTrustScreen
from loom_engine.events import HookRan
from loom_engine.hooks.config import HookCommand, HookSet
from loom_engine.mcp.config import ServerConfig

GUARD = HookCommand(event="PreToolUse", matcher="Bash", command='"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
                    timeout_s=5.0, source=".claude/settings.json", in_project=True)
FORMAT = HookCommand(event="PostToolUse", matcher="Write|Edit", command="ruff", args=("format", "--quiet"),
                     source=".loom/settings.toml", in_project=True)
CONTEXT = HookCommand(event="UserPromptSubmit", matcher="", command="~/bin/add-context.sh", fail_closed=True,
                      source="user config (~/.config/loom/config.toml)")
PLAN = HookPlan(found=(CONTEXT, FORMAT, GUARD), use=HookSet((CONTEXT, FORMAT)), untrusted=(GUARD,),
                problems=(".claude/settings.local.json: not valid JSON (line 1, column 2: Expecting property name "
                          "enclosed in double quotes): skipped",))


ADDITIONS = ProjectAdditions(
    workspace=Path("/home/dev/shop"),
    settings=(ProjectChange(".claude/settings.json", "permissions.allow", "bash(npm test:*)"),),
    settings_digest="d", hooks=(GUARD, FORMAT),
    servers=(ServerConfig(name="tracker", transport="stdio", source=Path("/home/dev/shop/.mcp.json"),
                          scope="project", command="npx", args=("-y", "@acme/tracker-mcp"),
                          env={"TRACKER_TOKEN": "${TRACKER_TOKEN}"},
                          entry={"command": "npx", "env": {"TRACKER_TOKEN": "${TRACKER_TOKEN}"}}),))


class Host(App[None]):
    """An empty chat under the screen."""

    def __init__(self, screen: ProjectTrustScreen | HooksScreen) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


@pytest.mark.parametrize("width", [120, 60])
def test_project_trust_question(snap_compare, width: int) -> None:
    assert snap_compare(Host(ProjectTrustScreen(ADDITIONS, guard_s=0.0)), terminal_size=(width, 40))


@pytest.mark.parametrize("width", [120, 60])
def test_slash_hooks(snap_compare, width: int) -> None:
    assert snap_compare(Host(HooksScreen(PLAN)), terminal_size=(width, 36))


class TranscriptApp(App[None]):
    def compose(self) -> ComposeResult:
        self.transcript = Transcript(id="transcript")
        yield self.transcript

    def on_mount(self) -> None:
        t = self.transcript
        t.add_user("clean the build and reformat app.py")
        blocked = t.add_tool(ToolCallData(call_id="c1", name="bash", input={"command": "rm -rf build"}))
        show_hook_ran(t, HookRan(event="PreToolUse", command=GUARD.command, source=GUARD.source, outcome="blocked",
                                 duration_ms=212.0, message="rm -rf is not allowed in this repository",
                                 call_id="c1"))
        blocked.finish(content="Blocked by a PreToolUse hook: rm -rf is not allowed in this repository",
                       is_error=True, duration_ms=215.0, display=None)
        edited = t.add_tool(ToolCallData(call_id="c2", name="edit_file", input={"path": "src/app.py"}))
        edited.finish(content="edited src/app.py", is_error=False, duration_ms=4.0, display=None)
        show_hook_ran(t, HookRan(event="PostToolUse", command="ruff format --quiet", source=FORMAT.source,
                                 outcome="ok", duration_ms=180.0, call_id="c2"))
        show_hook_ran(t, HookRan(event="PostToolUse", command="./lint.sh", source=FORMAT.source, outcome="error",
                                 duration_ms=40.0, message="exit 1: eslint: command not found", call_id="c2"))


@pytest.mark.parametrize("width", [120, 60])
def test_hook_runs_in_the_transcript(snap_compare, width: int) -> None:
    assert snap_compare(TranscriptApp(), terminal_size=(width, 20))
