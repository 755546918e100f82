"""/permissions: the rules in force, layer by layer, and the user's own ones to change.

Rules from settings files and command-line flags are shown but changed where they are
written; the user's answers (this session's, and the ones saved for this project) can be
removed here, and a typed rule can be added for this session or saved for the project.

    a   add a rule for this session ("allow bash(make test:*)", "deny read(*.pem)")
    s   add an allow rule and save it for this project
    x / Delete   remove the selected rule (session or saved only)
    Esc  close (or leave the rule being typed)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from loom_engine.permissions.layers import SOURCE_DEFAULTS, SOURCE_SAVED, SOURCE_SESSION
from loom_engine.permissions.rules import Behavior

LAYER_NAMES = {SOURCE_DEFAULTS: "built-in", SOURCE_SESSION: "this session (your answers)",
               SOURCE_SAVED: "this project (your saved answers)"}
_BEHAVIOR_STYLE = {"allow": "green", "ask": "yellow", "deny": "red"}
_ORDER = {"deny": 0, "ask": 1, "allow": 2}


class RuleEditor(Protocol):
    """What the screen needs of the permission manager."""

    @property
    def mode(self) -> Any: ...

    def effective_rules(self) -> list[tuple[str, str, str]]: ...

    def add_session_rule(self, behavior: Behavior, text: str) -> None: ...

    def allow_for_project(self, rules: Iterable[str]) -> None: ...

    def remove_rule(self, behavior: Behavior, text: str, source: str) -> None: ...


@dataclass(frozen=True)
class ShownRule:
    behavior: Behavior
    text: str
    source: str

    @property
    def removable(self) -> bool:
        return self.source in (SOURCE_SESSION, SOURCE_SAVED)


def layer_name(source: str) -> str:
    return LAYER_NAMES.get(source, source)


def parse_typed_rule(typed: str) -> tuple[Behavior, str]:
    """``"deny read(*.pem)"`` -> ("deny", "read(*.pem)"); a rule alone is an allow rule."""
    text = typed.strip()
    word, _, rest = text.partition(" ")
    if word in ("allow", "deny", "ask") and rest.strip():
        return cast(Behavior, word), rest.strip()
    return "allow", text


class PermissionsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    PermissionsScreen {
        align: center middle;
    }
    PermissionsScreen > Vertical {
        width: 100%;
        max-width: 120;
        height: auto;
        max-height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    PermissionsScreen #title {
        text-style: bold;
    }
    PermissionsScreen #rules {
        height: auto;
        max-height: 24;
    }
    PermissionsScreen #keys, PermissionsScreen #message {
        color: $text-muted;
    }
    PermissionsScreen #typed {
        display: none;
    }
    PermissionsScreen.typing #typed {
        display: block;
    }
    """

    def __init__(self, manager: RuleEditor) -> None:
        super().__init__()
        self.manager = manager
        self.rules: list[ShownRule] = []
        self._adding: Literal["session", "project"] = "session"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"Permissions · mode: {self.manager.mode}"),
                         id="title")
            yield OptionList(id="rules")
            yield Input(placeholder="allow|deny|ask RULE, e.g. allow bash(make test:*)  (Enter adds, Esc cancels)",
                        id="typed")
            yield Static("", id="message")
            yield Static(Text.assemble(("a", "bold"), " add for this session  ", ("s", "bold"),
                                       " add and save for this project  ", ("x", "bold"), " remove  ",
                                       ("esc", "bold"), " close"), id="keys")

    def on_mount(self) -> None:
        self.refresh_rules()
        self.query_one(OptionList).focus()

    # --- the list ------------------------------------------------------------------------

    def refresh_rules(self, keep: ShownRule | None = None) -> None:
        rows = [ShownRule(cast(Behavior, b), text, source) for b, text, source in self.manager.effective_rules()]
        by_source: dict[str, list[ShownRule]] = {}
        for row in rows:
            by_source.setdefault(row.source, []).append(row)
        options: list[Option | None] = []
        self.rules = []
        for source, layer in by_source.items():
            if options:
                options.append(None)
            editable = " · x removes" if layer[0].removable else ""
            options.append(Option(Text(f"{layer_name(source)}{editable}", style="bold"), disabled=True))
            for rule in sorted(layer, key=lambda r: _ORDER.get(r.behavior, 3)):
                line = Text.assemble("  ", (f"{rule.behavior:<5}", _BEHAVIOR_STYLE.get(rule.behavior, "")), " ",
                                     rule.text)
                options.append(Option(line, id=f"rule-{len(self.rules)}"))
                self.rules.append(rule)
        if not rows:
            options.append(Option(Text("no rules: the mode decides", style="italic"), disabled=True))
        option_list = self.query_one(OptionList)
        option_list.clear_options()
        option_list.add_options(options)
        target = self.rules.index(keep) if keep in self.rules else 0
        if self.rules:
            option_list.highlighted = option_list.get_option_index(f"rule-{target}")

    @property
    def selected(self) -> ShownRule | None:
        option_list = self.query_one(OptionList)
        index = option_list.highlighted
        if index is None:
            return None
        option_id = option_list.get_option_at_index(index).id or ""
        if not option_id.startswith("rule-"):
            return None
        return self.rules[int(option_id.removeprefix("rule-"))]

    def say(self, message: str) -> None:
        self.query_one("#message", Static).update(Text(message))

    # --- keys ----------------------------------------------------------------------------

    @property
    def typing(self) -> bool:
        return self.has_class("typing")

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            if self.typing:
                self.remove_class("typing")
                self.query_one(OptionList).focus()
            else:
                self.dismiss(None)
            return
        if self.typing:
            return
        if event.character in ("a", "s"):
            event.stop()
            self._adding = "session" if event.character == "a" else "project"
            self.add_class("typing")
            typed = self.query_one("#typed", Input)
            typed.value = ""
            typed.placeholder = ("RULE to allow in this project, e.g. bash(make test:*)  (Enter saves)"
                                 if self._adding == "project" else
                                 "allow|deny|ask RULE, e.g. allow bash(make test:*)  (Enter adds)")
            typed.focus()
        elif event.character == "x" or event.key == "delete":
            event.stop()
            self.remove_selected()

    def remove_selected(self) -> None:
        rule = self.selected
        if rule is None:
            self.say("select a rule first")
            return
        if not rule.removable:
            self.say(f"{rule.text} comes from {layer_name(rule.source)}: change it there")
            return
        try:
            self.manager.remove_rule(rule.behavior, rule.text, rule.source)
        except ValueError as error:
            self.say(f"✗ {error}")
            return
        self.refresh_rules()
        self.say(f"removed {rule.behavior} {rule.text} ({layer_name(rule.source)})")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        typed = event.value.strip()
        if not typed:
            return
        behavior, text = parse_typed_rule(typed)
        try:
            if self._adding == "project":
                if behavior != "allow":
                    raise ValueError("only allow rules are saved for the project; add the others for this session")
                self.manager.allow_for_project([text])
                source = SOURCE_SAVED
            else:
                self.manager.add_session_rule(behavior, text)
                source = SOURCE_SESSION
        except ValueError as error:
            self.say(f"✗ {error}")
            return
        self.remove_class("typing")
        self.query_one(OptionList).focus()
        added = ShownRule(behavior, text, source)
        self.refresh_rules(keep=added)
        self.say(f"added {behavior} {text} ({layer_name(source)})")
