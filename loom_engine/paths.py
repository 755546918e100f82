"""Where Loom keeps its files (platformdirs; XDG variables are honoured on Linux)."""

from __future__ import annotations

import importlib.util
import os
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
