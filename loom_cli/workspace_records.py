"""What Loom remembers about each workspace, kept outside it in the user data dir.

One JSON file, ``workspaces.json``, keyed by the workspace's real path:

* ``trusted_settings`` — the hash of the project-settings changes the user trusted
  (:func:`loom_cli.project_trust.changes_hash`); a different set of changes asks again.
* ``mcp_servers`` — the user's answer about each project MCP server (``.mcp.json``),
  keyed by :attr:`loom_engine.mcp.config.ServerConfig.entry_hash`: ``true`` approved,
  ``false`` refused. A changed entry has a new hash, so Loom asks again.
* ``trusted_hooks`` — the project hook entries the user trusted, by the key of
  :func:`loom_cli.hook_trust.hook_trust` (the entry with its file, and the content of the
  workspace scripts it runs): a new or changed entry or script is not in the list, so Loom
  asks again. Only "yes" is recorded:
  "no" holds for the session it was given in.
* ``trusted_additions`` — what the user saw and trusted in the chat's start-up question, each
  piece by what it is (a setting, a hook's event, matcher and command, a server's name) with
  what it was then (see :mod:`loom_cli.project_additions`). It trusts nothing by itself: it
  only lets the next question say which pieces are new or changed.
* ``allow`` — the rules the user saved with "allow always in this project". They are the
  user's own answers, so they live here rather than in ``.loom/settings.local.toml``,
  which a repository can ship too and which is therefore untrusted until trusted.

Nothing here is ever inside the workspace, so a repository cannot trust itself. A record
that cannot be read counts as absent (Loom asks again); writes go to a temporary file
renamed over the old one, under a lock, so two Looms never lose each other's answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from loom_engine.private_files import open_private, private_folder

FILE_NAME = "workspaces.json"
SAVED_RULES_SOURCE = "saved answers"


class WorkspaceRecords:
    def __init__(self, data_dir: Path, *, same_as: tuple[Path, Path] | None = None) -> None:
        """``same_as``: (a workspace, another whose records it uses) - a `loom batch` task's
        worktree, its repository's. Safe because what is trusted is recorded by content (a
        hash), so the worktree's settings, hooks and servers are trusted only where they are
        what the user trusted in the repository."""
        self.path = data_dir / FILE_NAME
        self._same_as = {os.path.realpath(same_as[0]): os.path.realpath(same_as[1])} if same_as else {}

    def key(self, workspace: Path) -> str:
        real = os.path.realpath(workspace)
        return self._same_as.get(real, real)

    # -- reading ---------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        workspaces = data.get("workspaces") if isinstance(data, dict) else None
        return workspaces if isinstance(workspaces, dict) else {}

    def _entry(self, workspace: Path) -> dict[str, Any]:
        entry = self._load().get(self.key(workspace))
        return entry if isinstance(entry, dict) else {}

    def trusted_hash(self, workspace: Path) -> str | None:
        value = self._entry(workspace).get("trusted_settings")
        return value if isinstance(value, str) else None

    def saved_rules(self, workspace: Path) -> tuple[str, ...]:
        rules = self._entry(workspace).get("allow")
        if not isinstance(rules, list):
            return ()
        return tuple(rule for rule in rules if isinstance(rule, str))

    def mcp_decision(self, workspace: Path, entry_hash: str) -> bool | None:
        """The user's answer about a project MCP server entry: True approved, False
        refused, None not asked yet."""
        decisions = self._entry(workspace).get("mcp_servers")
        value = decisions.get(entry_hash) if isinstance(decisions, dict) else None
        return value if isinstance(value, bool) else None

    def trusted_hooks(self, workspace: Path) -> frozenset[str]:
        """The trust keys of the project hooks the user trusted in this workspace."""
        hashes = self._entry(workspace).get("trusted_hooks")
        if not isinstance(hashes, list):
            return frozenset()
        return frozenset(value for value in hashes if isinstance(value, str))

    def trusted_additions(self, workspace: Path) -> dict[str, str]:
        """identity -> fingerprint of each project addition the user trusted in the chat."""
        pieces = self._entry(workspace).get("trusted_additions")
        if not isinstance(pieces, dict):
            return {}
        return {key: value for key, value in pieces.items() if isinstance(key, str) and isinstance(value, str)}

    # -- writing ---------------------------------------------------------------------

    def trust_all(self, workspace: Path, *, settings_hash: str | None, hook_keys: Sequence[str],
                  servers: Sequence[str], pieces: Mapping[str, str]) -> None:
        """Record one yes to everything the project adds: the settings' changes, these hooks'
        trust keys, these servers' entry hashes (approved), and what was shown."""
        with self._editing() as workspaces:
            entry = workspaces.setdefault(self.key(workspace), {})
            if settings_hash is not None:
                entry["trusted_settings"] = settings_hash
            if hook_keys:
                _add_hooks(entry, hook_keys)
            if servers:
                _decide(entry, servers, True)
            seen = entry.get("trusted_additions")
            seen = dict(seen) if isinstance(seen, dict) else {}
            seen.update(pieces)
            entry["trusted_additions"] = seen

    def trust(self, workspace: Path, settings_hash: str) -> None:
        with self._editing() as workspaces:
            workspaces.setdefault(self.key(workspace), {})["trusted_settings"] = settings_hash

    def decide_mcp(self, workspace: Path, entry_hash: str, approved: bool) -> None:
        """Record the user's answer about a project MCP server entry."""
        with self._editing() as workspaces:
            _decide(workspaces.setdefault(self.key(workspace), {}), [entry_hash], approved)

    def trust_hooks(self, workspace: Path, entry_hashes: Sequence[str]) -> None:  # trust keys
        """Record that the user trusted these project hook entries."""
        if not entry_hashes:
            return
        with self._editing() as workspaces:
            _add_hooks(workspaces.setdefault(self.key(workspace), {}), entry_hashes)

    def save_rules(self, workspace: Path, rules: Sequence[str]) -> None:
        if not rules:
            return  # an answer that saves nothing writes nothing
        with self._editing() as workspaces:
            entry = workspaces.setdefault(self.key(workspace), {})
            saved = [rule for rule in entry.get("allow", []) if isinstance(rule, str)]
            saved.extend(rule for rule in rules if rule not in saved)
            entry["allow"] = saved

    def forget_rules(self, workspace: Path, rules: Sequence[str]) -> None:
        """Remove saved rules (the user removed them in /permissions)."""
        if not rules:
            return
        with self._editing() as workspaces:
            entry = workspaces.setdefault(self.key(workspace), {})
            entry["allow"] = [rule for rule in entry.get("allow", []) if isinstance(rule, str) and rule not in rules]

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict[str, Any]]:
        private_folder(self.path.parent)
        with open_private(self.path.with_suffix(".lock")) as lock:
            _lock(lock.fileno())
            workspaces = self._load()
            for key, value in list(workspaces.items()):
                if not isinstance(value, dict):
                    del workspaces[key]
            yield workspaces
            fd, tmp = tempfile.mkstemp(prefix=".workspaces.", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"version": 1, "workspaces": workspaces}, handle, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


def _add_hooks(entry: dict[str, Any], keys: Sequence[str]) -> None:
    trusted = [value for value in entry.get("trusted_hooks", []) if isinstance(value, str)] \
        if isinstance(entry.get("trusted_hooks"), list) else []
    trusted.extend(value for value in keys if value not in trusted)
    entry["trusted_hooks"] = trusted


def _decide(entry: dict[str, Any], entry_hashes: Sequence[str], approved: bool) -> None:
    decisions = entry.get("mcp_servers")
    if not isinstance(decisions, dict):
        decisions = entry["mcp_servers"] = {}
    decisions.update(dict.fromkeys(entry_hashes, approved))


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: the rename still keeps the file whole
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
