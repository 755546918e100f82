"""Ctrl+G: edit the prompt in the user's editor ($VISUAL, else $EDITOR, else vi)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from textual.app import App, SuspendNotSupported

ReturnT = TypeVar("ReturnT")


def editor_command(env: Mapping[str, str]) -> list[str]:
    value = env.get("VISUAL") or env.get("EDITOR") or "vi"
    return shlex.split(value) or ["vi"]


def edit_in_editor(app: App[ReturnT], text: str) -> str | None:
    """The text as the editor left it; None when no editor could run (the reason is raised)."""
    handle, name = tempfile.mkstemp(prefix="loom-prompt-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        # The app gives the terminal to the editor and takes it back when it exits.
        with app.suspend():
            result = subprocess.run([*editor_command(os.environ), str(path)], check=False)
        if result.returncode != 0:
            raise OSError(f"the editor exited with status {result.returncode}; the prompt is unchanged")
        edited = path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)
    # Editors end the file with a newline the user did not type.
    return edited[:-1] if edited.endswith("\n") else edited


__all__ = ["SuspendNotSupported", "edit_in_editor", "editor_command"]
