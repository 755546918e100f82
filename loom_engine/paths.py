"""Where Loom keeps its files (platformdirs; XDG variables are honoured on Linux)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import platformdirs

APP_NAME = "loom"


def config_dir() -> Path:
    """User config: config.toml, LOOM.md, skills/."""
    override = os.environ.get("LOOM_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    """User data: sessions/, history/."""
    override = os.environ.get("LOOM_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME))


def protected_paths(also: Iterable[Path] = ()) -> tuple[Path, ...]:
    """Loom's own folders: no tool may change anything in them unasked, in any mode.

    The config folder holds what runs at the next start (config.toml and its hooks,
    mcp.json, agents/, commands/, skills/, LOOM.md); the data folder holds the trust
    records (workspaces.json), sessions and snapshots. When Loom is opened in ``~`` or a
    dotfiles repository they lie inside the workspace, where accept-edits would otherwise
    write them. The CLI turns these into ask rules for every file tool; the sandbox makes
    them read-only. Each is given as configured and, when a symlink leads elsewhere, as
    where it leads too. ``also``: more folders of the same kind (Claude Code's user folder,
    when Loom reads it: its settings.json allows commands and runs hooks at the next start).
    """
    found: list[Path] = []
    for folder in (config_dir(), data_dir(), *also):
        absolute = Path(os.path.abspath(folder))
        for path in (absolute, Path(os.path.realpath(absolute))):
            if path not in found:
                found.append(path)
    return tuple(found)


# Turns reading Claude Code's user folder off for one process ("0", "false", "off", "no").
READ_CLAUDE_HOME_VARIABLE = "LOOM_READ_CLAUDE_HOME"
CLAUDE_HOME_LABEL = "~/.claude"
_OFF_WORDS = frozenset({"0", "false", "off", "no"})


def claude_home(enabled: bool = True, environ: Mapping[str, str] | None = None) -> Path | None:
    """Claude Code's user folder (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``), whose
    CLAUDE.md, agents/, commands/, skills/ and settings.json Loom reads as the user's own;
    None when reading it is turned off (``enabled``: the user config's
    ``[claude] read_user_folder``; the environment variable wins for one process)."""
    env = os.environ if environ is None else environ
    if env.get(READ_CLAUDE_HOME_VARIABLE, "").strip().lower() in _OFF_WORDS:
        return None
    if not enabled and not env.get(READ_CLAUDE_HOME_VARIABLE, "").strip():
        return None
    override = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(os.path.expanduser(override)) if override else Path.home() / ".claude"


def claude_config_file(home: Path | None, environ: Mapping[str, str] | None = None) -> Path | None:
    """Claude Code's own config file, where `claude mcp add` keeps the user's MCP servers:
    ``~/.claude.json``, or ``.claude.json`` inside ``$CLAUDE_CONFIG_DIR`` when that is set
    (as Claude Code places it); None when ``home`` is (reading ``~/.claude`` is off)."""
    if home is None:
        return None
    env = os.environ if environ is None else environ
    return home / ".claude.json" if env.get("CLAUDE_CONFIG_DIR", "").strip() else Path.home() / ".claude.json"


def sessions_dir() -> Path:
    return data_dir() / "sessions"


def user_config_file() -> Path:
    return config_dir() / "config.toml"


def builtin_skills_dir() -> Path:
    """The skills shipped with Loom (the top-level ``skills`` package's folder)."""
    spec = importlib.util.find_spec("skills")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parent.parent / "skills"
