"""Asked once, before the agent is built: trust what this project adds?

A repository set up for Claude Code can ship settings that widen what Loom may do
(`.claude/settings*.json`, `.loom/settings*.toml`: allow rules, a looser mode, an endpoint,
the model, a project agent's model...), hooks (commands run when their event fires) and MCP
servers (`.mcp.json`: programs started, addresses called). Whatever of that the user has not
trusted yet is shown in one question (:mod:`loom_cli.project_additions` reads it): the
settings' changes, each hook with its event, matcher, command and the scripts its trust
covers, each server with its command line or URL and the names (never the values) of what it
is given. Anything the user trusted before and that changed since is marked.

``y`` trusts all of it (recorded outside the workspace, each kind by its own key, so a new or
changed piece asks again); ``n`` or Esc starts without it, for this session (asked again at the
next start). `/hooks` and `/mcp` show the details later, trusted or not.

Everything from the repository is shown as ``Text``, never as markup, and the app shows
control characters visibly (:mod:`.safe_text`): a hostile name or command is read, not obeyed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from loom_cli.project_trust import ADD_DIRS_KEY

from .question_box import Question, QuestionBox, box_css

if TYPE_CHECKING:
    from textual.app import App

    from loom_cli.project_additions import Mark, ProjectAdditions
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
_MARK_WORDS = {"new": "new", "changed": "changed since you trusted it"}
TRUST_KEY, REFUSE_KEY = "y", "n"


def read_current(workspace: Path) -> ProjectAdditions:
    """What the workspace adds that is not trusted yet, from the files and records as they
    are now (in a thread: it reads files and hashes the hooks' folders)."""
    from loom_cli.project_additions import read_additions
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.paths import config_dir, data_dir, user_config_file
    from loom_engine.workspace import find_workspace_root

    return read_additions(find_workspace_root(workspace), user_config_file(), config_dir(),
                          WorkspaceRecords(data_dir()))


def remember(additions: ProjectAdditions) -> str | None:
    """Record the yes; a one-line reason when it could not be written (the settings still
    hold for this session; hooks and servers stay off: they run only as recorded)."""
    from loom_cli.project_additions import trust_additions
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.paths import data_dir

    try:
        trust_additions(WorkspaceRecords(data_dir()), additions)
    except OSError as error:
        return (f"could not remember the trust ({error.strerror or error}): the project's hooks and MCP "
                "servers stay off")
    return None


async def settle_trust(app: App[int], options: TuiOptions) -> TuiOptions:
    """Ask when needed (from the app's start-up worker); the options to build the agent with.
    A yes is recorded first, so building the agent finds the hooks and servers trusted."""
    try:
        additions = await asyncio.to_thread(read_current, options.workspace)
    except Exception:  # never block start-up: unasked, only what is recorded applies
        return options
    if additions.empty:
        return options
    trusted = await app.push_screen_wait(ProjectTrustScreen(additions, guard_s=options.permission_guard_s))
    if not trusted:  # a "no" holds for this session even if another window says yes
        return replace(options, trust_project=False) if additions.settings else options
    problem = await asyncio.to_thread(remember, additions)
    if problem:
        app.notify(problem, severity="warning", markup=False)
        # Not recorded: the settings still hold for this session, as they are when the agent is built.
        return replace(options, trust_project=True) if additions.settings else options
    # Recorded: the records decide, by the hash of exactly the changes shown (a file changed
    # since the question was drawn is not trusted by this yes).
    return options


def mark_text(mark: Mark | None) -> Text | None:
    return Text(f"[{_MARK_WORDS[mark]}]", style="bold magenta") if mark is not None else None


def describe_changes(changes: Sequence[ProjectChange], marks: Sequence[Mark | None] = ()) -> Text:
    """The settings' changes, file by file, each with why it needs trust (and its mark)."""
    marked = dict(zip(changes, marks, strict=False))
    text = Text()
    for source in dict.fromkeys(c.source for c in changes):
        text.append(f"  {source}\n", style="bold")
        for change in (c for c in changes if c.source == source):
            text.append("  • ")
            text.append(change.describe(), style="bold yellow")
            text.append(f"  — {_why(change)}", style="dim")
            mark = mark_text(marked.get(change))
            if mark is not None:
                text.append("  ")
                text.append_text(mark)
            text.append("\n")
    text.rstrip()
    return text


def _why(change: ProjectChange) -> str:
    if change.agent is not None:
        return _WHY_AGENT_MODEL
    if change.key.endswith(".base_url"):
        return "sends your requests (and API key) there"
    return _WHY.get(change.key, "needs trust")


def additions_text(additions: ProjectAdditions) -> Text:
    """Everything the question lists, kind by kind."""
    from .hooks_screen import hook_text
    from .mcp_screens import pending_text

    text = Text()
    if additions.settings:
        text.append("Settings that widen what Loom may do\n", style="bold underline")
        text.append_text(describe_changes(additions.settings,
                                          [additions.setting_mark(change) for change in additions.settings]))
    if additions.hooks:
        text.append("\n\n" if text.plain else "")
        text.append("Hooks: commands run on your machine when their event fires\n", style="bold underline")
        for index, hook in enumerate(additions.hooks):
            text.append("\n" if index else "")
            text.append_text(hook_text(hook, trust=additions.hook_trust.get(hook),
                                       mark=mark_text(additions.hook_mark(hook))))
    if additions.servers:
        text.append("\n\n" if text.plain else "")
        text.append("MCP servers: programs started (or addresses called) with your permissions\n",
                    style="bold underline")
        text.append_text(pending_text(additions.servers,
                                      [mark_text(additions.server_mark(server)) for server in additions.servers],
                                      additions.workspace))
    return text


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


class ProjectTrustScreen(QuestionBox[bool]):
    """Trust what the project adds? True: all of it, recorded; False: none, this session."""

    DEFAULT_CSS = box_css("ProjectTrustScreen", "$warning")

    def __init__(self, additions: ProjectAdditions, *, guard_s: float = 1.0) -> None:
        super().__init__({TRUST_KEY: True, REFUSE_KEY: False, "escape": False}, guard_s=guard_s)
        self.additions = additions

    def question(self) -> Question:
        additions = self.additions
        kinds = [kind for count, kind in (
            (len(additions.settings), _count(len(additions.settings), "setting that widens", "settings that widen")),
            (len(additions.hooks), _count(len(additions.hooks), "hook", "hooks")),
            (len(additions.servers), _count(len(additions.servers), "MCP server", "MCP servers"))) if count]
        again = bool(additions.trusted_before)
        title = Text(f"{'Trust what changed in' if again else 'Trust'} the project in {additions.workspace}?")
        lead = Text(("Since you trusted it, this project's files changed. It" if again else "This project's files")
                    + f" would add {', '.join(kinds)}. Until you trust them, settings may only narrow what "
                    "Loom does, hooks do not run and servers do not start.")
        note = Text("A repository you cloned can ship these files: trust them only if you know where they come "
                    "from. Your answer is remembered until any of it changes; /hooks and /mcp show them later.")
        keys = Text.assemble((TRUST_KEY, "bold green"), " trust all of it   ", (REFUSE_KEY, "bold red"), " / ",
                             ("Esc", "bold"), "  don't trust: start without it")
        return Question(title=title, lead=lead, listed=additions_text(additions), note=note, keys=keys)
