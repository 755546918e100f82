"""Loom's settings, read once from their three files and merged with where each came from.

Order, later winning: defaults < Claude Code's ``~/.claude/settings.json`` (the user's
own, see :mod:`.claude_home`) < user config.toml < .loom/settings.toml <
.loom/settings.local.toml < environment (LOOM_PROVIDER, LOOM_MODEL, LOOM_SANDBOX) <
command-line flags.

Both project files sit in the repository, so a cloned repository can ship either: what
they would widen or redirect is applied only once the user trusts the workspace (see
:mod:`.project_trust`); what only narrows is always applied. Claude Code's
``.claude/settings.json`` and ``.claude/settings.local.json`` count the same way for their
``permissions`` (read by :mod:`.claude_settings`, applied after the user config and before
``.loom/``), and a project agent file's ``model`` is part of the same trust. A file's ``hooks`` table
(Claude Code's structure, in TOML) is not a setting to merge: every file's hooks count,
and a project's are trusted entry by entry (see :mod:`.hook_setup`). Provider endpoints are the
user's own: ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` beat the user config, which
beats the project, trusted or not. So is the ``[sandbox]``: a project file may tighten it,
never turn it off or widen it, trusted or not (see :mod:`.sandbox_settings`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loom_engine.permissions.modes import PermissionMode
from loom_engine.providers.base import StreamTimeouts
from loom_engine.providers.endpoints import BASE_URL_VARIABLES
from loom_engine.providers.names import ProviderName, ReasoningEffort, WireApi
from loom_engine.sandbox.config import SandboxMode

from .project_trust import ProjectChange, split_project_file
from .sandbox_settings import (
    MODE_FLAG,
    MODE_VARIABLE,
    SANDBOX_KEY,
    SandboxSettings,
    mode_from_environment,
    split_project_sandbox,
)
from .user_setup import user_config_problem

PROJECT_SOURCE = ".loom/settings.toml"
LOCAL_SOURCE = ".loom/settings.local.toml"
DEFAULT_SOURCE = "default"
# Read per file by hook_setup (problems there are warnings, not errors); never merged.
HOOKS_KEY = "hooks"
# The warm server's table: the user's config.toml only (see WarmSettings).
WARM_KEY = "warm"
# The user's own switches, which no project file may set (left out with a line): the warm
# server, whether Claude Code's user folder is read, and memory (a project must not name
# where its memory's text is sent for embeddings).
USER_ONLY_KEYS = (WARM_KEY, "claude", "memory")
# Far beyond any real settings file; a bigger one is refused unread.
MAX_FILE_BYTES = 1_000_000


class ConfigError(Exception):
    """A config file or value that is wrong; the message names the file and the problem."""


class ProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str | None = None


class OpenAISettings(ProviderSettings):
    """``[openai]``: also which API to speak and how hard a reasoning model thinks."""

    wire_api: WireApi = "auto"
    reasoning_effort: ReasoningEffort | None = None


class PermissionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)


class SnapshotSettings(BaseModel):
    """``[snapshots]``: the workspace snapshots rewind restores from."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    keep_prompts: Annotated[int, Field(ge=1)] = 100  # snapshots of older prompts are pruned
    max_file_mb: Annotated[float, Field(gt=0)] = 2.0  # a bigger file is left out of snapshots
    max_total_mb: Annotated[float, Field(gt=0)] = 512.0  # files beyond this total are left out
    max_files: Annotated[int, Field(ge=1)] = 200_000  # a workspace with more is not snapshotted


class WarmSettings(BaseModel):
    """``[warm]``: the warm server (loom_cli/warm/). Read by the `loom` entry point from
    the user's config.toml alone (loom_cli.warm.place.choose); here so that the file
    validates and `loom config` shows it."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    idle_minutes: Annotated[float, Field(gt=0)] = 10.0


class ClaudeHomeSettings(BaseModel):
    """``[claude]``: whether Claude Code's user folder is read (see :mod:`.claude_home`).
    Only the user's config.toml may set it: a project file's ``[claude]`` is left out."""

    model_config = ConfigDict(extra="forbid")
    read_user_folder: bool = True


# When a session's lessons are proposed for long-term memory (MemorySettings.promote).
PromoteWhen = Literal["off", "chat", "always"]


class MemorySettings(BaseModel):
    """``[memory]``: the project's long-term memory (docs/memory.md). User config only."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    # At a session's end and at each compaction, ask the model (one small request) which
    # facts are worth keeping, and propose them. "chat" (the default): the chat asks at
    # /clear and on quitting; "always": `loom run` too, saving them to a proposals file
    # (a request more per run, so scripts opt in); "off". true/false mean always/off.
    promote: PromoteWhen = "chat"

    @field_validator("promote", mode="before")
    @classmethod
    def _promote_flag(cls, value: object) -> object:
        return {True: "always", False: "off"}.get(value, value) if isinstance(value, bool) else value
    # An OpenAI-compatible embeddings endpoint (``.../v1``) for recall by meaning; None:
    # recall ranks by words (bm25) only. Its key: the ``embeddings_key_env`` variable.
    embeddings_url: str | None = None
    embeddings_model: str = "text-embedding-3-small"
    embeddings_key_env: str = "OPENAI_API_KEY"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: ProviderName | None = None
    model: str | None = None
    max_turns: int = Field(100, ge=1)
    max_tokens: int = Field(8192, ge=1)
    compact_threshold: float = Field(0.92, ge=0.1, le=1.0)
    context_window: int | None = Field(None, ge=1024)
    thinking_budget: int | None = Field(None, ge=1024)
    redact_secrets: bool = True
    permission_mode: PermissionMode = "default"
    # Seconds a model stream may stay silent before the attempt counts as stalled and is
    # retried: before its answer starts, and mid-answer (defaults and why: StreamTimeouts).
    stream_first_byte_timeout: float = Field(StreamTimeouts.first_event_s, gt=0)
    stream_idle_timeout: float = Field(StreamTimeouts.idle_s, gt=0)
    anthropic: ProviderSettings = Field(default_factory=ProviderSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    snapshots: SnapshotSettings = Field(default_factory=SnapshotSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    warm: WarmSettings = Field(default_factory=WarmSettings)
    claude: ClaudeHomeSettings = Field(default_factory=ClaudeHomeSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)


@dataclass(frozen=True)
class SettingsFile:
    """One settings file as read: validated, not yet merged."""

    path: Path
    source: str  # how it is named to the user
    in_project: bool  # inside the workspace: untrusted until the user trusts it
    data: Mapping[str, Any]
    # What was wrong with a project file, one line each: its unknown keys (left out), or
    # why it was skipped (then ``data`` is empty). A user file with a problem is an error.
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleSet:
    """The ``[permissions]`` rules one file contributes (what the engine calls a layer)."""

    source: str
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadedSettings:
    settings: Settings
    # Dotted key ("permission_mode", "anthropic.base_url") -> where its value came from.
    sources: Mapping[str, str]
    rules: tuple[RuleSet, ...]
    # What the project files would widen or redirect, applied or not (the trust question).
    widening: tuple[ProjectChange, ...]
    # The part of ``widening`` left out because the workspace is not trusted.
    ignored: tuple[ProjectChange, ...]
    trusted: bool
    # The files as read, for what is collected per file rather than merged (hooks).
    files: tuple[SettingsFile, ...] = ()
    # What the project files would open up in the sandbox: never applied, trusted or not.
    refused: tuple[ProjectChange, ...] = ()
    # Folders the tools may use besides the workspace (a trusted project's
    # ``additionalDirectories``).
    add_dirs: tuple[Path, ...] = ()
    # One line each: what Claude Code's files hold that Loom left out or read differently.
    claude_problems: tuple[str, ...] = ()
    # The part of ``add_dirs`` the user's own ~/.claude/settings.json adds (no trust needed).
    user_dirs: tuple[Path, ...] = ()

    @property
    def problems(self) -> tuple[str, ...]:
        """What was left out of the project's files, and why; one line each, to warn."""
        return self.claude_problems + tuple(problem for file in self.files for problem in file.problems)


def settings_files(workspace: Path, user_config_file: Path) -> list[Path]:
    """Every file settings come from, in the order they apply (the later wins)."""
    from .claude_settings import CLAUDE_FILES

    return [user_config_file, *(workspace / name for name in CLAUDE_FILES),
            workspace / ".loom" / "settings.toml", workspace / ".loom" / "settings.local.toml"]


def user_source(path: Path) -> str:
    shown = str(path)
    home = str(Path.home())
    if shown.startswith(home + os.sep):
        shown = "~" + shown[len(home):]
    return f"user config ({shown})"


def read_settings_files(workspace: Path, user_config_file: Path) -> list[SettingsFile]:
    """The settings files that exist, each read and validated once (the one reader).

    The user's own file is strict: a problem there raises :class:`ConfigError` (a typo
    must not quietly drop a deny rule). A project file comes with the repository: its
    unknown keys are left out and named, and one Loom cannot read — not UTF-8, not TOML,
    a value of the wrong kind — is skipped with one line, so a repository cannot stop Loom.
    """
    found: list[SettingsFile] = []
    labelled = ((user_config_file, user_source(user_config_file), False),
                (workspace / ".loom" / "settings.toml", PROJECT_SOURCE, True),
                (workspace / ".loom" / "settings.local.toml", LOCAL_SOURCE, True))
    for path, source, in_project in labelled:
        if in_project:
            if path.exists() or path.is_symlink():
                found.append(_read_project_file(path, source))
            continue
        data = read_user_toml(path)
        found += _claude_home_file(data)
        if data:
            found.append(SettingsFile(path, source, in_project, data))
    return found


def read_user_toml(path: Path) -> dict[str, Any]:
    """The user's config.toml, validated ({} when there is none); ConfigError when it is wrong."""
    problem = user_config_problem(path)
    if problem:
        raise ConfigError(problem)
    if not path.is_file():
        return {}
    data = _read_toml(path)
    _validate(path, data)
    return data


def _claude_home_file(user_config: Mapping[str, Any]) -> list[SettingsFile]:
    """Claude Code's user settings.json as the user's own file (before config.toml, so
    Loom's own settings win), unless the user turned reading it off."""
    from loom_engine.paths import claude_home

    from .claude_home import enabled_in, read_user_claude_settings

    claude, problems = read_user_claude_settings(claude_home(enabled_in(user_config)))
    if claude is None:
        return []
    return [SettingsFile(claude.path, claude.source, False, claude.data, tuple(problems))]


def _read_project_file(path: Path, source: str) -> SettingsFile:
    if not path.is_file():
        return SettingsFile(path, source, True, {}, (f"{path}: not a file: skipped",))
    try:
        data = _read_toml(path)
        data, unknown = _without_unknown_keys(data)
        # What runs `loom` and what it reads of the user's are the user's choice, never a repository's.
        user_only = [f"{path}: [{key}] is read from the user config only: ignored"
                     for key in USER_ONLY_KEYS if key in data]
        data = {key: value for key, value in data.items() if key not in USER_ONLY_KEYS}
        _validate(path, data)
    except ConfigError as error:
        return SettingsFile(path, source, True, {}, (f"{error}: skipped",))
    problems = [f"{path}: unknown {'key' if len(unknown) == 1 else 'keys'} {', '.join(unknown)} "
                "ignored"] if unknown else []
    problems += user_only
    return SettingsFile(path, source, True, data, tuple(problems))


def _without_unknown_keys(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the keys the settings do not know (at the top or in a table), and
    those keys, dotted."""
    checked = {key: value for key, value in data.items() if key != HOOKS_KEY}
    try:
        Settings.model_validate(checked)
    except ValidationError as error:
        extra = [tuple(e["loc"]) for e in error.errors() if e["type"] == "extra_forbidden"]
    else:
        return data, []
    kept = {key: dict(value) if isinstance(value, dict) else value for key, value in data.items()}
    for loc in extra:
        table: Any = kept
        for part in loc[:-1]:
            table = table[part]
        del table[loc[-1]]
    return kept, [".".join(str(part) for part in loc) for loc in extra]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, not read")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at "
                          f"position {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deep") from None


def _validate(path: Path, data: Mapping[str, Any]) -> None:
    from loom_engine.permissions.rules import parse_rule

    try:
        Settings.model_validate({key: value for key, value in data.items() if key != HOOKS_KEY})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
    for behavior, texts in data.get("permissions", {}).items():
        for text in texts:
            try:
                parse_rule(text)
            except ValueError as error:
                raise ConfigError(f"{path}: [permissions] {behavior}: {error}") from None


def load_settings(workspace: Path, user_config_file: Path, *, trusted: bool | None = None,
                  trusted_hash: str | None = None, environ: Mapping[str, str] | None = None,
                  sandbox_mode: SandboxMode | None = None) -> LoadedSettings:
    """The effective settings. The project's widening part is applied when ``trusted`` is
    True, or when ``trusted`` is None and ``trusted_hash`` is the hash of that part (what
    the user trusted earlier). ``sandbox_mode`` is the ``--sandbox`` flag's."""
    from .project_trust import ADD_DIRS_KEY, agent_model_changes, changes_hash

    env = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    rules: list[RuleSet] = []
    files, problems = _with_claude_files(workspace, read_settings_files(workspace, user_config_file))
    widening: list[ProjectChange] = []
    refused: list[ProjectChange] = []
    user_dirs: list[Path] = []  # additionalDirectories of the user's own ~/.claude/settings.json
    pending: list[tuple[SettingsFile, dict[str, Any], list[ProjectChange]]] = []
    for file in files:
        if not file.in_project:
            add_dirs_of_user = file.data.get(ADD_DIRS_KEY, ())
            _apply(merged, sources, {k: v for k, v in file.data.items() if k != ADD_DIRS_KEY}, file.source)
            user_dirs.extend(Path(folder) for folder in add_dirs_of_user)
            continue
        base = Settings.model_validate(merged)
        narrowing, changes = split_project_file({k: v for k, v in file.data.items() if k != SANDBOX_KEY},
                                                base, file.source)
        widening.extend(changes)
        pending.append((file, narrowing, changes))
        _apply(merged, sources, narrowing, file.source)
        if SANDBOX_KEY in file.data:
            tighter, opened = split_project_sandbox(file.data[SANDBOX_KEY], base.sandbox, file.source)
            refused.extend(opened)
            earlier = sources.get(f"{SANDBOX_KEY}.deny_read")
            _apply(merged, sources, {SANDBOX_KEY: tighter}, file.source)
            if earlier and "deny_read" in tighter:  # the project's paths are added to the earlier ones
                sources[f"{SANDBOX_KEY}.deny_read"] = f"{earlier} + {file.source}"
    widening.extend(agent_model_changes(workspace))  # applied where the agents are built
    is_trusted = bool(widening) and (trusted if trusted is not None else changes_hash(widening) == trusted_hash)
    add_dirs: list[Path] = list(user_dirs)
    if is_trusted:
        user_urls = {name: merged.get(name, {}).get("base_url") for name in BASE_URL_VARIABLES}
        for file, _narrowing, changes in pending:
            for change in changes:
                if change.key.endswith(".base_url") and user_urls.get(change.key.split(".")[0]):
                    continue  # the user's own endpoint beats the project's, trusted or not
                if change.key == ADD_DIRS_KEY:
                    add_dirs.append(Path(change.value))
                    continue
                _apply(merged, sources, change.as_data(), file.source)
    # Rules: every file's deny and ask; allow only from the user and a trusted project.
    for file in files:
        perms = file.data.get("permissions", {})
        allow = tuple(perms.get("allow", ())) if (is_trusted or not file.in_project) else ()
        rule_set = RuleSet(file.source, allow, tuple(perms.get("deny", ())), tuple(perms.get("ask", ())))
        if "permissions" in file.data:
            rules.append(rule_set)
    merged.pop("permissions", None)  # the rules live in their layers, each with its source
    for key, variable in (("provider", "LOOM_PROVIDER"), ("model", "LOOM_MODEL")):
        if env.get(variable):
            merged[key] = env[variable]
            sources[key] = variable
    for name, variable in BASE_URL_VARIABLES.items():
        if env.get(variable):
            merged.setdefault(name, {})["base_url"] = env[variable]
            sources[f"{name}.base_url"] = variable
    try:
        chosen_mode = mode_from_environment(env)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    for mode, source in ((chosen_mode, MODE_VARIABLE), (sandbox_mode, MODE_FLAG)):
        if mode is not None:
            merged.setdefault(SANDBOX_KEY, {})["mode"] = mode
            sources[f"{SANDBOX_KEY}.mode"] = source
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"LOOM_{where.upper()}: {first['msg']}") from None
    ignored = () if is_trusted else tuple(widening)
    return LoadedSettings(settings, sources, tuple(rules), tuple(widening), ignored, is_trusted, tuple(files),
                          tuple(refused), tuple(add_dirs), tuple(problems), tuple(user_dirs))


def _with_claude_files(workspace: Path, files: list[SettingsFile]) -> tuple[list[SettingsFile], list[str]]:
    """``files`` with Claude Code's project files after the user's config (so the order
    is: user config, .claude/settings.json, .claude/settings.local.json, .loom/ files),
    and the problems of reading them."""
    from .claude_settings import read_claude_files

    claude, problems = read_claude_files(workspace)
    problems += [problem for file in claude for problem in file.problems]
    read = [SettingsFile(file.path, file.source, True, file.data) for file in claude]
    return [f for f in files if not f.in_project] + read + [f for f in files if f.in_project], problems


def _apply(merged: dict[str, Any], sources: dict[str, str], data: Mapping[str, Any], source: str) -> None:
    for key, value in data.items():
        if key in ("permissions", HOOKS_KEY):
            continue  # rules and hooks are collected per file, never merged away
        if isinstance(value, dict):
            table = merged.setdefault(key, {})
            for sub, sub_value in value.items():
                table[sub] = sub_value
                sources[f"{key}.{sub}"] = source
        else:
            merged[key] = value
            sources[key] = source


def choose_provider(settings: Settings, flag: str | None) -> str:
    if flag:
        return flag
    if settings.provider:
        return settings.provider
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL") or settings.openai.base_url:
        return "openai"
    return "anthropic"
