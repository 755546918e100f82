"""The permission question, docked where the input box is (under the transcript).

The transcript stays on screen above it and keeps scrolling (mouse wheel, PgUp/PgDn),
so what the assistant just said is never hidden by the question. The panel caps the
height of its preview (diff, command) and scrolls it, so the choices below always fit.

Choices, one per line so that all of them fit from 50 columns on:

    y  allow once
    a  allow always this session          (only when a rule can be saved)
    p  allow always in this project       (idem)
    e  allow all edits this session       (edit prompts: switches to accept-edits)
    n  no, stop here (Esc)                (denies and ends the turn)
    d  no, and tell Loom why              (denies with a note; the run goes on)

Answer keys are ignored for ``guard_s`` after the question opens, and the choices are
shown dimmed until then: someone typing a prompt when the request pops up must not
approve a command with their next letter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Input, Static

from loom_engine.events import PermissionRequested
from loom_engine.permissions.answer import Decision, PermissionAnswer

from .diff_view import DiffView

# After "n" (or Esc) in the question: the call did not run, and the turn ended.
STOPPED_NOTE = "refused, not applied — tell Loom what to do instead"
# Every key a choice may use: swallowed while the question is open, even when this
# question does not offer it, so a stray letter never lands anywhere else.
ANSWER_KEYS = frozenset("yapend")
# The preview (diff, command) takes at most this share of the screen's height, and scrolls.
PREVIEW_SHARE = 0.4
PREVIEW_MIN_ROWS = 3


@dataclass(frozen=True)
class PromptReply:
    """What the user chose: the answer for the engine, and what the app does besides."""

    answer: PermissionAnswer
    # Esc / n: the turn ends here (no new request to the model).
    stop_turn: bool = False
    # "allow all edits this session": the permission mode becomes accept-edits.
    accept_edits: bool = False


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    reply: PromptReply | None  # None: asks for a note first (d)
    danger: bool = False


def is_new_file(preview: Mapping[str, Any]) -> bool:
    diff = str(preview.get("diff") or "")
    return preview.get("kind") == "diff" and diff.startswith("--- /dev/null")


def describe_request(request: PermissionRequested) -> str:
    preview = request.preview or {}
    kind = preview.get("kind")
    if kind == "diff":
        verb = "create" if is_new_file(preview) else "change"
        return f"{request.tool} wants to {verb} {preview.get('path', '')}"
    if kind == "command":
        return f"{request.tool} wants to run a command"
    if kind == "path":
        return f"{request.tool} wants to access {preview.get('path', '')} (outside the workspace)"
    if kind == "url":
        return f"{request.tool} wants to fetch a web page"
    if kind == "mcp":
        return f"the MCP server {preview.get('server', '')} wants to run its tool {preview.get('tool', '')}"
    return f"{request.tool} needs your permission"


def _what(request: PermissionRequested) -> str:
    kind = (request.preview or {}).get("kind")
    what = {"command": "command", "diff": "change", "url": "address", "path": "path", "mcp": "call"}
    return what.get(str(kind), "request")


def choices_for(request: PermissionRequested) -> tuple[Choice, ...]:
    """The choices that will work for this request: "always" only when a rule can be saved."""

    def allow(decision: Decision, **extra: bool) -> PromptReply:
        return PromptReply(PermissionAnswer(decision), **extra)

    choices = [Choice("y", "allow once", allow("allow_once"))]
    if request.suggested_rules:
        choices.append(Choice("a", "allow always this session", allow("allow_session")))
        choices.append(Choice("p", "allow always in this project", allow("allow_project")))
    if (request.preview or {}).get("kind") == "diff":
        choices.append(Choice("e", "allow all edits this session", allow("allow_once", accept_edits=True)))
    choices.append(Choice("n", "no, stop here (esc)", PromptReply(PermissionAnswer("deny"), stop_turn=True),
                          danger=True))
    choices.append(Choice("d", "no, and tell Loom why (it goes on)", None, danger=True))
    return tuple(choices)


def preview_widget(request: PermissionRequested) -> Static | DiffView:
    preview: Mapping[str, Any] = request.preview or {}
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
    if kind == "mcp":
        return Static(mcp_preview(preview), id="mcp")
    body = json.dumps(dict(request.input), indent=2, ensure_ascii=False, default=str)
    if kind == "error":
        text = Text(str(preview.get("message", "")) + "\n", style="italic")
        text.append(body)
        return Static(text, id="input")
    return Static(Syntax(body, "json", word_wrap=True, theme="ansi_dark", background_color="default"),
                  id="input")


def mcp_preview(preview: Mapping[str, Any]) -> Text:
    """Server, tool and the arguments (the engine sends them as indented JSON)."""
    text = Text()
    text.append("server ", style="dim")
    text.append(str(preview.get("server", "")), style="bold")
    text.append("  tool ", style="dim")
    text.append(str(preview.get("tool", "")), style="bold")
    arguments = preview.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, indent=2, ensure_ascii=False, default=str)
    text.append("\n")
    text.append_text(Syntax(arguments, "json", theme="ansi_dark", background_color="default").highlight(arguments))
    text.rstrip()
    return text


class PermissionPrompt(Vertical, can_focus=True):
    """One question at a time; hidden when there is none (see `PermissionQueue`)."""

    DEFAULT_CSS = """
    PermissionPrompt {
        display: none;
        height: auto;
        border: round $warning;
        padding: 0 1;
    }
    PermissionPrompt.open {
        display: block;
    }
    PermissionPrompt:focus-within {
        border: round $warning;
    }
    PermissionPrompt #title {
        text-style: bold;
        color: $text-warning;
    }
    PermissionPrompt #reason, PermissionPrompt #rules {
        color: $text-muted;
    }
    PermissionPrompt #preview {
        height: auto;
        max-height: 12;
        overflow-y: auto;
        background: $background;
        scrollbar-size-vertical: 1;
    }
    PermissionPrompt .choice {
        height: 1;
    }
    PermissionPrompt.guarded .choice {
        color: $text-disabled;
    }
    PermissionPrompt #note {
        display: none;
    }
    PermissionPrompt.noting #note {
        display: block;
    }
    """
    BINDINGS = [
        # The transcript above scrolls while the question waits.
        Binding("pageup", "scroll_transcript(-1)", "scroll up", show=False),
        Binding("pagedown", "scroll_transcript(1)", "scroll down", show=False),
        Binding("shift+up", "scroll_preview(-1)", show=False),
        Binding("shift+down", "scroll_preview(1)", show=False),
        # As in Claude Code: arrows pick a choice, Enter takes it (the letters do both).
        Binding("up", "move(-1)", show=False),
        Binding("down", "move(1)", show=False),
    ]

    def __init__(self, *, scroll_transcript: Callable[[int], None] = lambda pages: None,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self._scroll_transcript = scroll_transcript
        self.request: PermissionRequested | None = None
        self.guard_s = 0.0
        self._opened = 0.0
        self._on_reply: Callable[[PromptReply], None] | None = None
        self._choices: dict[str, Choice] = {}
        self._selected = 0
        # Answer keys pressed before the question was live (for tests and the curious).
        self.ignored_keys: list[str] = []

    # --- opening and closing ------------------------------------------------------------

    def open(self, request: PermissionRequested, *, guard_s: float, on_reply: Callable[[PromptReply], None]) -> None:
        self.request = request
        self.guard_s = guard_s
        self._on_reply = on_reply
        self.ignored_keys = []
        self._opened = time.monotonic()
        choices = choices_for(request)
        self._choices = {c.key: c for c in choices}
        self._selected = 0
        self.remove_children()
        self.mount_all(list(self._widgets(request, choices)))
        self.call_after_refresh(self._fit)
        self.remove_class("noting")
        self.set_class(guard_s > 0, "guarded")
        self.add_class("open")
        if guard_s > 0:
            opened = self._opened
            self.set_timer(guard_s, lambda: self._arm(opened))
        self.focus()

    def on_mount(self) -> None:
        # A relative max-height (vh) is not honoured in an auto-height panel, so the
        # preview's cap is set in cells, again whenever the screen's layout changes.
        self.screen.screen_layout_refresh_signal.subscribe(self, lambda _screen: self._fit())

    def _fit(self) -> None:
        cap = max(PREVIEW_MIN_ROWS, int(self.screen.size.height * PREVIEW_SHARE))
        for preview in self.query("#preview"):
            if preview.styles.max_height is None or preview.styles.max_height.value != cap:
                preview.styles.max_height = cap

    def close(self) -> None:
        self.request = None
        self._on_reply = None
        self.remove_class("open", "noting")
        self.remove_children()

    @property
    def is_open(self) -> bool:
        return self.request is not None

    def _widgets(self, request: PermissionRequested, choices: tuple[Choice, ...]) -> list[Widget]:
        widgets: list[Widget] = [Static(Text(f"⚠ {describe_request(request)}"), id="title")]
        if request.reason:
            widgets.append(Static(Text(request.reason), id="reason"))
        widgets.append(Vertical(preview_widget(request), id="preview"))
        if request.suggested_rules:
            rules = "always allow saves: " + ", ".join(request.suggested_rules)
        else:
            rules = f"no rule can cover this {_what(request)}: Loom asks each time"
        widgets.append(Static(Text(rules), id="rules"))
        for index, choice in enumerate(choices):
            widgets.append(Static(self._choice_line(choice, index == self._selected), classes="choice",
                                  id=f"choice-{choice.key}"))
        widgets.append(Input(placeholder="what Loom should do instead; Enter sends, Esc goes back", id="note"))
        return widgets

    @staticmethod
    def _choice_line(choice: Choice, selected: bool) -> Text:
        return Text.assemble(("❯ " if selected else "  ", "bold"),
                             (choice.key, "bold red" if choice.danger else "bold green"), "  ",
                             (choice.label, "bold" if selected else ""))

    def _arm(self, opened: float) -> None:
        if opened == self._opened:
            self.remove_class("guarded")

    @property
    def armed(self) -> bool:
        return time.monotonic() - self._opened >= self.guard_s

    @property
    def noting(self) -> bool:
        return self.has_class("noting")

    # --- answering ----------------------------------------------------------------------

    def _reply(self, reply: PromptReply) -> None:
        on_reply, self._on_reply = self._on_reply, None
        if on_reply is not None:
            on_reply(reply)

    def on_key(self, event: events.Key) -> None:
        if not self.is_open:
            return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            if self.noting:  # back to the choices
                self.remove_class("noting")
                self.focus()
            else:
                self._reply(PromptReply(PermissionAnswer("deny"), stop_turn=True))
            return
        if self.noting:
            return  # the note input takes every other key
        character = (event.character or "").lower()
        if character in ANSWER_KEYS or event.key == "enter":
            event.stop()
            event.prevent_default()
            if not self.armed:
                self.ignored_keys.append(event.key)
                return
            if event.key == "enter":
                choice: Choice | None = list(self._choices.values())[self._selected]
            else:
                choice = self._choices.get(character)
            if choice is not None:
                self._choose(choice)

    def _choose(self, choice: Choice) -> None:
        if choice.reply is None:
            self.add_class("noting")
            self.query_one("#note", Input).focus()
        else:
            self._reply(choice.reply)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._reply(PromptReply(PermissionAnswer("deny", event.value.strip() or None)))

    def action_scroll_transcript(self, pages: int) -> None:
        self._scroll_transcript(pages)

    def action_move(self, step: int) -> None:
        if not self.is_open or self.noting or not self._choices:
            return
        choices = list(self._choices.values())
        before = self._selected
        self._selected = (self._selected + step) % len(choices)
        for index in (before, self._selected):
            choice = choices[index]
            self.query_one(f"#choice-{choice.key}", Static).update(self._choice_line(choice, index == self._selected))

    def action_scroll_preview(self, lines: int) -> None:
        for preview in self.query("#preview"):
            preview.scroll_relative(y=lines, animate=False)
