"""How a hook is shown, and `/hooks`.

A repository can ship hooks (``.loom/settings*.toml``, ``.claude/settings*.json``): each
is a command that would run on the user's machine whenever its event fires. The chat's
start-up question about the project (:mod:`.trust_screen`) lists the project hooks the user
has not trusted yet with :func:`hook_text`: event, matcher, command and file, the workspace
scripts it runs and the folders its trust covers.

`/hooks` lists every hook with the same details and its trust state, and the problems
found in the files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .question_box import box_css

if TYPE_CHECKING:
    from loom_cli.hook_setup import HookPlan
    from loom_cli.hook_trust import HookTrust
    from loom_engine.hooks.config import HookCommand

_STATE_STYLE = {"user": "dim", "trusted": "green", "not trusted": "bold red"}


def hook_text(hook: HookCommand, state: str | None = None, trust: HookTrust | None = None,
              mark: Text | None = None) -> Text:
    """One hook: event and matcher, the command, its file (and trust state, the workspace
    scripts its trust covers; ``mark`` after the first line: new, changed)."""
    from loom_cli.hook_setup import describe_command, describe_matcher
    from loom_engine.hooks.config import DEFAULT_TIMEOUT_S

    text = Text("  • ")
    text.append(hook.event, style="bold")
    matcher = describe_matcher(hook)
    text.append(f"  {matcher}" if matcher else "  (every time)", style="cyan" if matcher else "dim")
    if state is not None:
        text.append("  ")
        text.append(f"[{state}]", style=_STATE_STYLE.get(state, ""))
    if mark is not None:
        text.append("  ")
        text.append_text(mark)
    text.append(f"\n    {describe_command(hook)}", style="bold yellow")
    details = [f"from {hook.source}"]
    if hook.timeout_s != DEFAULT_TIMEOUT_S:
        details.append(f"timeout {hook.timeout_s:g}s")
    if hook.fail_closed:
        details.append("fail closed")
    text.append("\n    " + " · ".join(details), style="dim")
    if trust is not None:
        text.append_text(_scripts_text(trust))
    return text


def _scripts_text(trust: HookTrust) -> Text:
    """The workspace scripts a hook runs and the folders its trust covers (see loom_cli.hook_trust)."""
    from loom_cli.hook_trust import too_big_line

    readable = [name for name in trust.files if name not in trust.unreadable]
    text = Text()
    if readable:
        text.append(f"\n    runs {', '.join(readable)}", style="bold")
    if trust.remembers:
        *first, last = trust.remembers
        text.append(f"\n    trusts {', '.join(first) + ' and ' if first else ''}{last}", style="bold")
        text.append(", as it is now" if len(trust.remembers) == 1 else ", as they are now", style="dim")
    if trust.unreadable:
        text.append(f"\n    cannot read {', '.join(trust.unreadable)}: this hook stays off", style="bold red")
    for folder in trust.too_big:
        text.append(f"\n    {too_big_line(folder)}", style="bold red")
    return text


def hooks_text(hooks: Sequence[HookCommand], plan: HookPlan | None = None,
               trust: Mapping[HookCommand, HookTrust] | None = None) -> Text:
    text = Text()
    for index, hook in enumerate(hooks):
        if index:
            text.append("\n")
        text.append_text(hook_text(hook, plan.state(hook) if plan is not None else None,
                                   trust.get(hook) if trust is not None else None))
    return text


class HooksScreen(ModalScreen[None]):
    """`/hooks`: every hook, where it comes from and whether it runs; the files' problems."""

    DEFAULT_CSS = box_css("HooksScreen", "$primary") + """
    HooksScreen .problems {
        color: $text-error;
        margin-top: 1;
    }
    """

    def __init__(self, plan: HookPlan, trust: Callable[[HookPlan], str | None] | None = None) -> None:
        super().__init__()
        self.plan = plan
        # Trusts the plan's project hooks not trusted yet, as shown; a one-line problem or None.
        self.trust = trust

    def compose(self) -> ComposeResult:
        from loom_cli.hook_setup import TRUST_FLAG

        plan = self.plan
        with Vertical():
            yield Static(f"Hooks ({len(plan.found)})" if plan.found else "Hooks", classes="title")
            with VerticalScroll():
                if plan.found:
                    yield Static(hooks_text(plan.found, plan), id="hooks-list")
                else:
                    yield Static(Text("No hooks. Add them under [hooks] in your config.toml or "
                                      ".loom/settings.toml (Claude Code's format); .claude/settings.json is "
                                      "read too.", style="dim"), id="hooks-list")
                if plan.problems:
                    lines = "\n".join(f"  • {problem}" for problem in plan.problems)
                    yield Static(Text(f"Problems (those entries are skipped):\n{lines}"), classes="problems")
            if plan.untrusted:
                yield Static(Text("Hooks not trusted do not run: Loom asks about them at start, with the rest of "
                                  "what the project adds; "
                                  f"`loom run {TRUST_FLAG}` runs them for one run.", style="dim"), id="hooks-note")
            yield Static(Text.assemble(*((("t", "bold"), " trust the hooks not trusted   ")
                                         if plan.untrusted and self.trust is not None else ()),
                                       ("Esc", "bold"), " close"), id="hooks-keys")

    def on_key(self, event: events.Key) -> None:
        if event.key in ("escape", "q"):
            event.stop()
            self.dismiss(None)
        elif event.key == "t" and self.plan.untrusted and self.trust is not None:
            event.stop()
            problem = self.trust(self.plan)
            if problem is not None:
                self.query_one("#hooks-note", Static).update(Text(problem))
                return
            self.plan = replace(self.plan, untrusted=())
            self.query_one("#hooks-list", Static).update(hooks_text(self.plan.found, self.plan))
            self.query_one("#hooks-note", Static).update(Text(
                "Trusted (remembered until an entry or a file in a folder it trusts changes): they run "
                "from /clear or the next start.", style="bold"))
            self.query_one("#hooks-keys", Static).update(Text.assemble(("Esc", "bold"), " close"))


# --- the plan as it is now ------------------------------------------------------------


def current_plan(workspace: Path) -> HookPlan | None:
    """The hooks of the workspace's files as they are now, trust as recorded; None when a
    settings file cannot be read (building the agent reports it)."""
    from loom_cli.hook_setup import read_hook_plan
    from loom_cli.settings import ConfigError
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.paths import data_dir, user_config_file
    from loom_engine.workspace import find_workspace_root

    try:
        return read_hook_plan(find_workspace_root(workspace), user_config_file(), WorkspaceRecords(data_dir()))
    except ConfigError:
        return None
