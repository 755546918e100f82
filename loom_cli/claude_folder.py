"""Where Claude Code's user folder is for this user, as their own config.toml's switch
and the environment say (:mod:`.claude_home` reads the folder; this module needs the
settings loader to read the switch, which in turn reads the folder's settings.json)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from loom_engine.paths import claude_home

from .claude_home import enabled_in
from .settings import ConfigError, read_user_toml


def find_claude_home(user_config_file: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder to read, or None when it is turned off. A user config that cannot be
    read leaves the switch on here; the settings loader reports that file's problem."""
    try:
        data = read_user_toml(user_config_file)
    except ConfigError:
        data = {}
    return claude_home(enabled_in(data), environ)


def user_claude_home() -> Path | None:
    """:func:`find_claude_home` for this process's user config and environment."""
    from loom_engine.paths import user_config_file

    return find_claude_home(user_config_file())
