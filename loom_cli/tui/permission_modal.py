"""The permission modal: exactly what will happen, and one key to decide.

y allow once · a allow always (this session) · p allow always in this project
n deny · d deny with a note for the model · Esc deny

Answer keys are ignored for `guard_s` after the modal opens: someone typing a prompt
when the request pops up must not approve a command with their next letter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from loom_engine.events import PermissionRequested
from loom_engine.permissions.answer import PermissionAnswer

from .diff_view import DiffView

ANSWER_KEYS: Mapping[str, str] = {
    "y": "allow_once",
    "a": "allow_session",
    "p": "allow_project",
    "n": "deny",
}


def describe_request(request: PermissionRequested) -> str:
    preview = request.preview or {}
    kind = preview.get("kind")
    if kind == "diff":
        return f"{request.tool} wants to change {preview.get('path', '')}"
    if kind == "command":
        return f"{request.tool} wants to run a command"
    if kind == "path":
        return f"{request.tool} wants to access {preview.get('path', '')} (outside the workspace)"
    if kind == "url":
        return f"{request.tool} wants to fetch a web page"
    return f"{request.tool} needs your permission"


class PermissionModal(ModalScreen[PermissionAnswer]):
    DEFAULT_CSS = """
    PermissionModal {
        align: center bottom;
        background: $background 40%;
    }
    PermissionModal > #dialog {
        width: 100%;
        max-width: 120;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 1;
        margin: 0 1 1 1;
    }
    PermissionModal #title {
        text-style: bold;
        color: $text-warning;
    }
    PermissionModal #reason {
        color: $text-muted;
    }
    PermissionModal #preview {
        height: auto;
        max-height: 30;
        margin: 1 0;
        background: $background;
    }
    PermissionModal #rules {
        color: $text-muted;
    }
    PermissionModal #keys {
        margin-top: 1;
    }
    PermissionModal #keys.guarded {
        color: $text-disabled;
    }
    PermissionModal #note {
        display: none;
    }
    PermissionModal.noting #note {
        display: block;
    }
    """

    def __init__(self, request: PermissionRequested, *, guard_s: float = 1.0) -> None:
        super().__init__(classes="permission-modal")
        self.request = request
        self.guard_s = guard_s
        self._opened = 0.0
        self._answered = False
        self.ignored_keys: list[str] = []

    # --- layout -----------------------------------------------------------------------

    def _preview_widget(self) -> Static | DiffView:
        preview: Mapping[str, Any] = self.request.preview or {}
        kind = preview.get("kind")
        if kind == "diff" and preview.get("diff"):
            return DiffView(str(preview["diff"]), id="diff")
        if kind == "command":
            command = str(preview.get("command", ""))
            return Static(Syntax(command, "bash", word_wrap=True, theme="ansi_dark", background_color="default"),
                          id="command")
        if kind == "path":
            return Static(Text(str(preview.get("path", "")), style="bold"), id="path")
        if kind == "url":
            return Static(Text(str(preview.get("url", "")), style="bold"), id="url")
        if kind == "diff":
            return Static(Text(f"{preview.get('path', '')} (no changes shown)"), id="path")
        body = json.dumps(dict(self.request.input), indent=2, ensure_ascii=False, default=str)
        if kind == "error":
            text = Text(str(preview.get("message", "")) + "\n", style="italic")
            text.append(body)
            return Static(text, id="input")
        body = json.dumps(dict(self.request.input), indent=2, ensure_ascii=False, default=str)
        return Static(Syntax(body, "json", word_wrap=True, theme="ansi_dark", background_color="default"),
                      id="input")

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Static(Text(f"⚠ {describe_request(request)}"), id="title")
            if request.reason:
                yield Static(Text(request.reason), id="reason")
            with VerticalScroll(id="preview"):
                yield self._preview_widget()
            if request.suggested_rules:
                yield Static(Text("always allow saves: " + ", ".join(request.suggested_rules)), id="rules")
            yield Input(placeholder="note for the model, Enter to deny with it", id="note")
            keys = Text.assemble(("y", "bold green"), " allow once  ", ("a", "bold green"),
                                 " allow always (session)  ", ("p", "bold green"),
                                 " always in this project  ", ("n", "bold red"), " deny  ",
                                 ("d", "bold red"), " deny with note  ", ("esc", "bold"), " deny")
            yield Static(keys, id="keys", classes="guarded" if self.guard_s > 0 else "")

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        if self.guard_s > 0:
            self.set_timer(self.guard_s, self._arm)

    def _arm(self) -> None:
        self.query_one("#keys").remove_class("guarded")

    @property
    def armed(self) -> bool:
        return time.monotonic() - self._opened >= self.guard_s

    # --- answering --------------------------------------------------------------------

    def answer(self, decision: str, note: str | None = None) -> None:
        if self._answered:
            return
        self._answered = True
        self.dismiss(PermissionAnswer(decision, note or None))  # type: ignore[arg-type]

    @property
    def noting(self) -> bool:
        return self.has_class("noting")

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            note = self.query_one("#note", Input).value.strip() if self.noting else ""
            self.answer("deny", note)
            return
        if self.noting:
            return  # the note input takes every other key
        character = (event.character or "").lower()
        if character in ANSWER_KEYS or character == "d" or event.key == "enter":
            event.stop()
            event.prevent_default()
            if not self.armed:
                self.ignored_keys.append(event.key)
                return
            if character == "d":
                self.add_class("noting")
                self.query_one("#note", Input).focus()
            elif character in ANSWER_KEYS:
                self.answer(ANSWER_KEYS[character])

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.answer("deny", event.value.strip())
