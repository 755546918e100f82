"""Asked once per workspace, before the agent is built: trust what its settings would change?

A repository's `.loom/settings.toml` / `.loom/settings.local.toml` (and Claude Code's
`.claude/settings.json` / `.claude/settings.local.json`) may only narrow what Loom does until
the user trusts the workspace. When they would widen or redirect something (allow rules, a
looser mode, a provider base URL, the model, a project agent's model...), this screen lists
exactly those changes. `t` trusts them (remembered in the user data dir by a hash of the changes, so a
different set asks again); `n` or Esc starts without them (asked again next time).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from loom_cli.project_trust import ADD_DIRS_KEY

if TYPE_CHECKING:
    from textual.app import App

    from loom_cli.project_trust import ProjectChange

    from .options import TuiOptions

_WHY = {
    "permission_mode": "a looser permission mode",
    "permissions.allow": "runs without asking",
    "max_turns": "more turns than your settings allow",
    "redact_secrets": "turns secret redaction off",
    "model": "chooses the model (what you pay for)",
    "provider": "chooses the vendor your requests (and that vendor's API key) go to",
    ADD_DIRS_KEY: "the tools may read and edit there too",
}
_WHY_AGENT_MODEL = "sends the sub-agent's work to that model's vendor"


@dataclass(frozen=True)
class TrustQuestion:
    workspace: Path
    changes: tuple[ProjectChange, ...]
    digest: str


def trust_question(workspace: Path) -> TrustQuestion | None:
    """The question to ask, or None when the project's settings change nothing that needs
    trust, or the user already trusted exactly these changes. A settings file with an
    error asks nothing here: building the agent reports it."""
    from loom_cli.project_trust import changes_hash
    from loom_cli.settings import ConfigError, load_settings
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.paths import data_dir, user_config_file
    from loom_engine.workspace import find_workspace_root

    root = find_workspace_root(workspace)
    try:
        loaded = load_settings(root, user_config_file(), trusted_hash=WorkspaceRecords(data_dir()).trusted_hash(root))
    except ConfigError:
        return None
    if not loaded.widening or loaded.trusted:
        return None
    return TrustQuestion(root, loaded.widening, changes_hash(loaded.widening))


def remember_trust(question: TrustQuestion) -> str | None:
    """Record the trust; a one-line reason when it could not be written (it still holds for
    this session)."""
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.paths import data_dir

    try:
        WorkspaceRecords(data_dir()).trust(question.workspace, question.digest)
    except OSError as error:
        return f"could not remember the trust: {error.strerror or error}"
    return None


async def settle_trust(app: App[int], options: TuiOptions) -> TuiOptions:
    """Ask when needed (from the app's start-up worker); the options to build the agent with."""
    import asyncio

    try:
        question = await asyncio.to_thread(trust_question, options.workspace)
    except Exception:  # never block start-up: unasked, only an exact recorded trust applies
        question = None
    if question is None:
        return options
    trusted = await app.push_screen_wait(TrustScreen(question, guard_s=options.permission_guard_s))
    if not trusted:  # a "no" holds for this session even if another window says yes
        return replace(options, trust_project=False)
    problem = await asyncio.to_thread(remember_trust, question)
    if problem:
        app.notify(problem, severity="warning", markup=False)
    return replace(options, trust_project=True)


def describe_changes(changes: Sequence[ProjectChange]) -> Text:
    text = Text()
    for source in dict.fromkeys(c.source for c in changes):
        text.append(f"{source}\n", style="bold")
        for change in (c for c in changes if c.source == source):
            text.append("  • ")
            text.append(change.describe(), style="bold yellow")
            why = _why(change)
            text.append(f"  — {why}\n", style="dim")
    text.rstrip()
    return text


def _why(change: ProjectChange) -> str:
    if change.agent is not None:
        return _WHY_AGENT_MODEL
    if change.key.endswith(".base_url"):
        return "sends your requests (and API key) there"
    return _WHY.get(change.key, "needs trust")


class TrustScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    TrustScreen {
        align: center middle;
        background: $background 60%;
    }
    TrustScreen > Vertical {
        width: 100%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 1;
        margin: 0 1;
    }
    TrustScreen #trust-title {
        text-style: bold;
        color: $text-warning;
    }
    TrustScreen #trust-changes {
        height: auto;
        max-height: 20;
        margin: 1 0;
    }
    TrustScreen #trust-keys {
        margin-top: 1;
    }
    """

    def __init__(self, question: TrustQuestion, *, guard_s: float = 1.0) -> None:
        super().__init__()
        self.question = question
        # Letters typed for the prompt just as the screen opens must not answer it.
        self._opened = time.monotonic()
        self._guard_s = guard_s

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"Trust the settings of {self.question.workspace}?"), id="trust-title")
            yield Static("This workspace's settings and agent files would change what Loom may do. Until you "
                         "trust them, Loom uses only what narrows (deny and ask rules, a stricter mode) and "
                         "leaves out:", id="trust-intro")
            with VerticalScroll(id="trust-changes"):
                yield Static(describe_changes(self.question.changes))
            yield Static("Your environment and your own config always win for endpoints and keys. A repository "
                         "you cloned can ship these files: trust them only if you know where they come from.",
                         id="trust-note")
            yield Static(Text.assemble(("t", "bold green"), " trust (remembered until they change)   ",
                                       ("n", "bold red"), " / Esc  start without them"), id="trust-keys")

    def on_key(self, event: events.Key) -> None:
        if time.monotonic() - self._opened < self._guard_s:
            event.stop()
            return
        if event.key == "t":
            event.stop()
            self.dismiss(True)
        elif event.key in ("n", "escape"):
            event.stop()
            self.dismiss(False)
