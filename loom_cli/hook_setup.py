"""Which hooks a Loom process runs: read from every settings file, then split by trust.

Files, in the order their hooks run in (every file's hooks count; none overrides another):

* the user's ``config.toml`` ``[hooks]`` — the user's own: no question;
* ``.loom/settings.toml``, ``.loom/settings.local.toml`` (the same structure in TOML);
* ``.claude/settings.json``, ``.claude/settings.local.json`` (Claude Code's own files,
  read as they are, so an existing setup runs unchanged).

The last four sit in the workspace, so a cloned repository can ship any of them (the
``.local`` ones too): their hooks run only once the user trusted that exact entry and
the folders its code lives in (recorded outside the workspace by the key of
:func:`~loom_cli.hook_trust.hook_trust`, see :class:`~loom_cli.workspace_records.WorkspaceRecords`),
or for one headless run with ``--trust-project-hooks``. Nothing inside the workspace can
mark a hook trusted, and the folders a project hook's trust covers are protected from the
model's file tools (:meth:`HookPlan.protected_paths`). A broken JSON file is one problem
line and skipped; an entry with a problem is skipped, the rest of its file still counts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from loom_engine.hooks.config import HookCommand, HookSet, parse_hooks

from .claude_settings import CLAUDE_FILES, read_json
from .hook_trust import HookTrust, hook_trust
from .settings import HOOKS_KEY, SettingsFile, read_settings_files
from .workspace_records import WorkspaceRecords

TRUST_FLAG = "--trust-project-hooks"

TrustState = Literal["user", "trusted", "not trusted"]


@dataclass(frozen=True)
class HookPlan:
    """Every hook found, and which of them run."""

    found: tuple[HookCommand, ...] = ()  # in file order
    use: HookSet = field(default_factory=HookSet)  # the user's, and the project's trusted ones
    untrusted: tuple[HookCommand, ...] = ()  # project hooks left out: not trusted (yet)
    problems: tuple[str, ...] = ()  # one line each, naming the file and the entry
    # Each project hook's trust key and the workspace files it covers (see loom_cli.hook_trust).
    trust: Mapping[HookCommand, HookTrust] = field(default_factory=dict)

    def state(self, hook: HookCommand) -> TrustState:
        if not hook.in_project:
            return "user"
        return "not trusted" if hook in self.untrusted else "trusted"

    def trust_keys(self, hooks: Sequence[HookCommand]) -> list[str]:
        """What to record when the user trusts ``hooks``: their keys as they were shown (a
        hook whose script cannot be read has none, so it stays off)."""
        keys = [trust.key for hook in hooks if (trust := self.trust.get(hook)) is not None]
        return [key for key in dict.fromkeys(keys) if key is not None]

    def protected_paths(self) -> tuple[Path, ...]:
        """The folders (and top-level scripts) every project hook's trust covers, trusted or
        not: the model's file tools must ask before changing them (or a yes at the next
        start would trust what the model wrote), and a sandbox binds them read-only."""
        return tuple(Path(path) for path in dict.fromkeys(
            path for trust in self.trust.values() for path in trust.guarded))

    def skipped_line(self) -> str | None:
        """For a headless run's stderr: the project hooks left out, how many, and the flag."""
        if not self.untrusted:
            return None
        files = ", ".join(dict.fromkeys(hook.source for hook in self.untrusted))
        count = len(self.untrusted)
        return (f"{count} project hook{'' if count == 1 else 's'} ({files}) not trusted: skipped "
                f"({TRUST_FLAG} runs {'it' if count == 1 else 'them'} for this run; `loom` asks to trust them)")


def read_hook_tables(workspace_root: Path, settings_files: Sequence[SettingsFile]
                     ) -> tuple[list[tuple[Any, str, bool]], list[str]]:
    """(hooks table, source, in the project) of each file that has one, and one line per
    file that could not be read (that file is skipped)."""
    tables: list[tuple[Any, str, bool]] = [(file.data[HOOKS_KEY], file.source, file.in_project)
                                           for file in settings_files if HOOKS_KEY in file.data]
    problems: list[str] = []
    for name in CLAUDE_FILES:
        data, problem = read_json(workspace_root / name, name)
        if problem is not None:
            problems.append(problem)
        elif data is not None and HOOKS_KEY in data:
            tables.append((data[HOOKS_KEY], name, True))
    return tables, problems


def plan_hooks(workspace_root: Path, settings_files: Sequence[SettingsFile], trusted: Collection[str], *,
               trust_project: bool = False) -> HookPlan:
    """The hooks of every file; a project hook is used when its trust key (the entry and the
    workspace files it runs) is in ``trusted`` (the user's records) or ``trust_project`` (the
    flag, for one run)."""
    tables, problems = read_hook_tables(workspace_root, settings_files)
    found: list[HookCommand] = []
    for table, source, in_project in tables:
        hooks, file_problems = parse_hooks(table, source=source, in_project=in_project)
        found.extend(hooks)
        problems.extend(file_problems)
    trust = {hook: hook_trust(hook, workspace_root) for hook in dict.fromkeys(found) if hook.in_project}
    untrusted = [hook for hook in found if hook.in_project and not trust_project
                 and (trust[hook].key is None or trust[hook].key not in trusted)]
    # A project hook runs pinned to the folders it was trusted with (see HookCommand.pinned).
    use = HookSet(tuple(trust[hook].pinned(hook) if hook.in_project else hook
                        for hook in found if hook not in untrusted))
    return HookPlan(tuple(found), use, tuple(untrusted), tuple(problems), trust)


def read_hook_plan(workspace_root: Path, user_config_file: Path, records: WorkspaceRecords, *,
                   trust_project: bool = False) -> HookPlan:
    """The plan straight from the files (the chat's question, `/hooks`). A settings file
    that is not valid TOML raises :class:`~loom_cli.settings.ConfigError`."""
    files = read_settings_files(workspace_root, user_config_file)
    return plan_hooks(workspace_root, files, records.trusted_hooks(workspace_root), trust_project=trust_project)


def describe_command(hook: HookCommand) -> str:
    """The command as it would run, on one line (arguments quoted only when needed)."""
    import shlex

    return " ".join([hook.command, *(shlex.quote(arg) for arg in hook.args)])


def describe_matcher(hook: HookCommand) -> str:
    """The matcher as the user wrote it; '' when it matches everything."""
    matcher = hook.matcher.strip()
    return "" if matcher in ("", "*") else matcher
