"""Ctrl+G: edit the prompt in the user's editor ($VISUAL, else $EDITOR, else vi)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from textual.app import App, SuspendNotSupported

from .paste import Draft
from .prompt_input import PromptInput

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


def edit_prompt(app: App[ReturnT], prompt: PromptInput, report: Callable[[str], object]) -> None:
    """Ctrl+G: the prompt's text goes to the editor and comes back; its pastes stay collapsed."""
    draft = prompt.draft
    try:
        edited = edit_in_editor(app, draft.text)
    except (OSError, SuspendNotSupported) as error:
        report(f"✗ cannot open the editor: {error or 'not supported in this terminal'}")
        return
    if edited is not None:
        prompt.set_draft(Draft(edited, draft.pastes))
    prompt.focus()
