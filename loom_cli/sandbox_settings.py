"""The ``[sandbox]`` settings: their schema, what a project file may change of them, and
the one :class:`~loom_engine.sandbox.config.SandboxConfig` they make.

Only the user turns the sandbox off or widens it: their config file, ``LOOM_SANDBOX``,
``--sandbox`` (later wins). A project file (``.loom/settings*.toml``) sits in the
repository, so whatever it would open up — mode ``off``, a wider network, domains,
writable folders, commands run unasked — is never applied, trusted or not, and is named
in one line. What only tightens is always applied: more unreadable paths, mode ``auto``
to ``on``, a narrower network, no unasked commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from loom_engine.permissions.rules import parse_rule
from loom_engine.permissions.tool_facts import BUILTIN_TOOL_FACTS
from loom_engine.sandbox.allowed_hosts import AllowedDomainsError, AllowedHosts
from loom_engine.sandbox.config import SANDBOX_MODES, NetworkMode, SandboxConfig, SandboxMode, default_deny_read

from .project_trust import ProjectChange

SANDBOX_KEY = "sandbox"
MODE_VARIABLE = "LOOM_SANDBOX"
MODE_FLAG = "--sandbox"

# How much each value confines, least first: a project may only move up these scales.
_MODE_STRENGTH: Mapping[str, int] = {"off": 0, "auto": 1, "on": 2}
_NETWORK_STRENGTH: Mapping[str, int] = {"on": 0, "allowlist": 1, "off": 2}


class SandboxSettings(BaseModel):
    """``[sandbox]`` as written in a settings file."""

    model_config = ConfigDict(extra="forbid")
    mode: SandboxMode = "auto"
    network: NetworkMode = "off"
    allowed_domains: list[str] = Field(default_factory=list)
    # Paths: ``~`` is the home folder; a relative path is relative to the workspace root.
    allow_write: list[str] = Field(default_factory=list)
    deny_read: list[str] = Field(default_factory=list)
    auto_allow_in_accept_edits: bool = True

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, names: list[str]) -> list[str]:
        # The proxy's own reading, so what is accepted here is exactly what it enforces.
        try:
            AllowedHosts.parse(names)
        except AllowedDomainsError as error:
            raise ValueError(str(error).removeprefix("[sandbox] allowed_domains: ")) from None
        return names

    @field_validator("allow_write", "deny_read")
    @classmethod
    def _paths(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path.strip() or "\0" in path:
                raise ValueError(f"{path!r} is not a path")
        return paths


def mode_from_environment(environ: Mapping[str, str]) -> SandboxMode | None:
    """``LOOM_SANDBOX`` (None when unset or empty); ValueError naming the choices when wrong."""
    value = environ.get(MODE_VARIABLE, "").strip().lower()
    if not value:
        return None
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    raise ValueError(f"{MODE_VARIABLE}={environ[MODE_VARIABLE]!r}: not a sandbox mode (use "
                     f"{', '.join(SANDBOX_MODES)})")


def split_project_sandbox(table: Mapping[str, Any], base: SandboxSettings, source: str
                          ) -> tuple[dict[str, Any], list[ProjectChange]]:
    """(what a project's ``[sandbox]`` table tightens, to apply; what it would widen, never
    applied) against ``base``: the sandbox settings from the files before it."""
    narrowing: dict[str, Any] = {}
    refused: list[ProjectChange] = []
    for key, value in table.items():
        if key == "deny_read":
            narrowing[key] = [*base.deny_read, *(path for path in value if path not in base.deny_read)]
        elif _tightens(key, value, base):
            narrowing[key] = value
        elif value != []:  # an empty allowed_domains or allow_write opens nothing: no word
            refused.append(ProjectChange(source, f"{SANDBOX_KEY}.{key}", value))
    return narrowing, refused


def _tightens(key: str, value: Any, base: SandboxSettings) -> bool:
    """Whether a project's ``key = value`` confines at least as much as ``base`` does."""
    if key == "mode":
        return _MODE_STRENGTH[value] >= _MODE_STRENGTH[base.mode]
    if key == "network":
        return _NETWORK_STRENGTH[value] >= _NETWORK_STRENGTH[base.network]
    if key == "auto_allow_in_accept_edits":
        return value is False or base.auto_allow_in_accept_edits
    return False  # allowed_domains, allow_write, and whatever is added later: they open up


def refused_line(changes: Sequence[ProjectChange]) -> str:
    """One line naming what a project tried to open up in the sandbox (never applied)."""
    from .project_trust import ignored_line

    return ("a project's settings cannot turn the sandbox off or widen it; ignored: "
            f"{ignored_line(changes)}")


def sandbox_config(chosen: SandboxSettings, workspace_root: Path, *, home: Path,
                   own_folders: Iterable[Path], denied_reads: Iterable[Path] = ()) -> SandboxConfig:
    """The one SandboxConfig of a session: the chosen settings, their paths made absolute,
    and the default unreadable paths (credentials in ``home``, Loom's ``own_folders``)
    ahead of the user's, then the paths read deny rules name (see :func:`read_denials`)."""
    def absolute(text: str) -> Path:
        return _absolute(text, workspace_root, home)

    deny_read = [*default_deny_read(home, *own_folders), *(absolute(path) for path in chosen.deny_read),
                 *denied_reads]
    return SandboxConfig(mode=chosen.mode, network=chosen.network,
                         allowed_domains=tuple(chosen.allowed_domains),
                         allow_write=tuple(dict.fromkeys(absolute(path) for path in chosen.allow_write)),
                         deny_read=tuple(dict.fromkeys(deny_read)),
                         auto_allow_in_accept_edits=chosen.auto_allow_in_accept_edits)


def _absolute(text: str, workspace_root: Path, home: Path) -> Path:
    if text == "~" or text.startswith("~/"):
        return home / text[2:]
    path = Path(text).expanduser()  # ~user/…
    return path if path.is_absolute() else workspace_root / path


@dataclass(frozen=True)
class ReadDenials:
    """What the sandbox makes of the deny rules for reading: ``paths`` it hides from every
    command (a rule naming one folder or file), and the ``unbound`` rules it cannot hold
    (a wildcard names no one place; the permission check alone holds those)."""

    paths: tuple[Path, ...] = ()
    unbound: tuple[str, ...] = ()

    def note(self) -> str:
        """One line for `loom sandbox`, or '' when every rule is a wall."""
        if not self.unbound:
            return ""
        return (f"read deny rules with a wildcard are not walls, only asked about: {', '.join(self.unbound)}")


def read_denials(deny_rules: Iterable[str], workspace_root: Path, *, home: Path) -> ReadDenials:
    """The deny rules (rule texts, any tool) that forbid reading, as the sandbox can hold
    them: a pattern with no wildcard before a closing ``/**`` (``./secrets/**``,
    ``secrets/``, ``.env``, ``~/private/**``) names one place to hide — a bare name at
    the workspace's top (the rule covers that name deeper too, which no wall can)."""
    readers = BUILTIN_TOOL_FACTS.rule_tools(write=False)
    paths: list[Path] = []
    unbound: list[str] = []
    for text in deny_rules:
        try:
            rule = parse_rule(text)
        except ValueError:
            continue  # the permission rules name it already, where they are loaded
        if rule.tool not in readers:
            continue
        place = _literal_place(rule.specifier) if rule.specifier is not None else ""
        if place:
            paths.append(_absolute(place, workspace_root, home))
        else:
            unbound.append(rule.text)
    return ReadDenials(tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(unbound)))


def _literal_place(spec: str) -> str:
    """The one path a read pattern names, or '' when it has a wildcard (or names the
    workspace itself, which cannot be hidden from the commands run in it)."""
    place = spec.strip()
    while place.endswith("/**"):
        place = place[:-3]
    place = place.rstrip("/")
    if place.startswith("./"):
        place = place[2:].lstrip("/")
    if not place or place in (".", "~") or any(ch in place for ch in "*?[\\"):
        return ""
    return place
