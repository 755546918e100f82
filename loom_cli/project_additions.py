"""Everything a project would add to what Loom does, read at once for the chat's one question.

A repository set up for Claude Code can ship three kinds of additions, each a way for a cloned
repository to act on the user's machine:

* settings that widen or redirect (:mod:`.project_trust`): allow rules, a looser mode, more
  folders, an endpoint, the model;
* hooks (:mod:`.hook_setup`): commands run at tool calls and session events;
* MCP servers (:mod:`.mcp_setup`): programs started, or addresses called, with the user's
  permissions.

Each kind keeps its own trust record and its own check, as before: the settings by the hash of
the exact set of changes, a hook by its entry and the folders its code lives in (re-checked
before each run), a server by its entry's hash. So a new or changed piece of any kind is
untrusted again, and only those pieces are asked about. What this module adds is reading the
three at once, recording a yes for all of them in one write, and naming what changed since the
user last trusted the workspace: each piece shown is remembered by what it is (its *identity*:
the setting, the hook's event, matcher and command, the server's name) with what was trusted
(its *fingerprint*), so the question can say "new", or "changed since you trusted it".

Nothing here is recorded for a "no": it holds for the session it was given in, and the next
start asks again (a headless run never asks: it leaves untrusted additions out and says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from loom_engine.hooks.config import HookCommand
    from loom_engine.mcp.config import ServerConfig

    from .hook_trust import HookTrust
    from .project_trust import ProjectChange
    from .workspace_records import WorkspaceRecords

Mark = Literal["new", "changed"]


@dataclass(frozen=True)
class ProjectAdditions:
    """What the workspace would add that the user has not trusted (yet), by kind."""

    workspace: Path
    # The settings' changes: the whole set when any part of it is not trusted.
    settings: tuple[ProjectChange, ...] = ()
    settings_digest: str | None = None
    hooks: tuple[HookCommand, ...] = ()
    hook_trust: Mapping[HookCommand, HookTrust] = field(default_factory=dict)
    servers: tuple[ServerConfig, ...] = ()
    # What the user trusted here before: identity -> fingerprint (empty: never asked and trusted).
    trusted_before: Mapping[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.settings or self.hooks or self.servers)

    def hook_keys(self) -> list[str]:
        """The trust keys of the hooks shown (a hook whose code cannot be pinned has none: it
        stays off even after a yes)."""
        keys = [trust.key for hook in self.hooks if (trust := self.hook_trust.get(hook)) is not None]
        return [key for key in dict.fromkeys(keys) if key is not None]

    def pieces(self) -> dict[str, str]:
        """identity -> fingerprint of everything shown (what a yes remembers for the marks)."""
        found = {setting_identity(change): setting_identity(change) for change in self.settings}
        found.update((hook_identity(hook), self._hook_fingerprint(hook)) for hook in self.hooks)
        found.update((server_identity(server), server.entry_hash) for server in self.servers)
        return found

    def mark(self, identity: str, fingerprint: str) -> Mark | None:
        """"new" or "changed" against what was trusted before; None on a first question (all
        of it is new then) or for a piece that is as it was."""
        if not self.trusted_before:
            return None
        before = self.trusted_before.get(identity)
        if before is None:
            return "new"
        return "changed" if before != fingerprint else None

    def setting_mark(self, change: ProjectChange) -> Mark | None:
        return self.mark(setting_identity(change), setting_identity(change))

    def hook_mark(self, hook: HookCommand) -> Mark | None:
        return self.mark(hook_identity(hook), self._hook_fingerprint(hook))

    def _hook_fingerprint(self, hook: HookCommand) -> str:
        trust = self.hook_trust.get(hook)
        return (trust.key if trust is not None else None) or hook.entry_hash

    def server_mark(self, server: ServerConfig) -> Mark | None:
        return self.mark(server_identity(server), server.entry_hash)


def setting_identity(change: ProjectChange) -> str:
    return f"setting\0{change.source}\0{change.describe()}"


def hook_identity(hook: HookCommand) -> str:
    from .hook_setup import describe_command

    return f"hook\0{hook.source}\0{hook.event}\0{hook.matcher}\0{describe_command(hook)}"


def server_identity(server: ServerConfig) -> str:
    return f"mcp\0{server.source.name}\0{server.name}"


def read_additions(workspace: Path, user_config_file: Path, config_dir: Path, records: WorkspaceRecords,
                   env: Mapping[str, str] | None = None) -> ProjectAdditions:
    """What ``workspace``'s files would add and the records do not trust yet. A settings file
    that cannot be read adds no settings and no hooks here (building the agent reports it)."""
    from .hook_setup import plan_hooks
    from .mcp_setup import plan_servers
    from .project_trust import changes_hash
    from .settings import ConfigError, load_settings

    settings: tuple[ProjectChange, ...] = ()
    hooks: tuple[HookCommand, ...] = ()
    hook_trust: Mapping[HookCommand, HookTrust] = {}
    try:
        loaded = load_settings(workspace, user_config_file, trusted_hash=records.trusted_hash(workspace),
                               environ=env)
    except ConfigError:
        loaded = None
    if loaded is not None:
        if loaded.widening and not loaded.trusted:
            settings = loaded.widening
        plan = plan_hooks(workspace, loaded.files, records.trusted_hooks(workspace))
        hooks, hook_trust = plan.untrusted, plan.trust
    from loom_engine.paths import claude_config_file

    from .claude_folder import find_claude_home

    # As bootstrap reads them: a server of the user's ~/.claude.json keeps its name from the project.
    claude_file = claude_config_file(find_claude_home(user_config_file))
    servers = plan_servers(workspace, config_dir, records, env=env, claude_file=claude_file).pending
    if not (settings or servers) and all(hook_trust[hook].key is None for hook in hooks):
        hooks = ()  # only hooks a yes cannot trust (their code cannot be pinned): nothing to ask
    return ProjectAdditions(workspace, settings, changes_hash(settings) if settings else None, hooks,
                            {hook: hook_trust[hook] for hook in hooks if hook in hook_trust}, servers,
                            records.trusted_additions(workspace))


def trust_additions(records: WorkspaceRecords, additions: ProjectAdditions) -> None:
    """Record a yes to everything ``additions`` shows, in one write (OSError when it cannot be
    written: then nothing is recorded)."""
    records.trust_all(additions.workspace, settings_hash=additions.settings_digest,
                      hook_keys=additions.hook_keys(),
                      servers=[server.entry_hash for server in additions.servers],
                      pieces=additions.pieces())
