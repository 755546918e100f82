"""What must hold in the user's own setup before Loom starts, checked once: Loom's
folders are folders, the user's config file (when there is one) is a file, and an
endpoint variable (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``) is an http(s) URL.

These are the user's mistakes, not the repository's, and nothing good comes of going
on: a config that is a folder would be skipped without a word, a bad URL found only at
the first prompt. The caller prints the line and exits 2 (bad usage). Cheap to import:
the chat runs it before its first frame.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from loom_engine.paths import config_dir, data_dir, user_config_file
from loom_engine.providers.endpoints import BASE_URL_VARIABLES, base_url_problem


def setup_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """The first thing wrong with the user's setup, as one line, or None."""
    env = os.environ if environ is None else environ
    for folder, what in ((config_dir(), "config"), (data_dir(), "data")):
        if folder.exists() and not folder.is_dir():
            return f"{folder}: Loom's {what} folder is not a folder"
    problem = user_config_problem(user_config_file())
    if problem:
        return problem
    for variable in BASE_URL_VARIABLES.values():
        value = env.get(variable)
        if value:  # set but empty: unset, as for the settings
            problem = base_url_problem(value, variable)
            if problem:
                return problem
    return None


def user_config_problem(path: Path) -> str | None:
    """Why the user's config file cannot be what Loom reads (a folder, or something other
    than a file), or None (a missing file is no problem: the defaults apply)."""
    if path.is_dir():
        return f"{path}: is a folder, not a settings file (move it away, or put config.toml there)"
    if path.exists() and not path.is_file():
        return f"{path}: is not a regular file"
    return None
