"""The rewind menu (Claude Code's): code and conversation, conversation only, code only,
or never mind. A choice that cannot be made is shown greyed with the reason."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from loom_engine.snapshots.model import RestorePlan, RestorePoint

from .picker import PickerScreen
from .rewind_picker import one_line, when

NEVER_MIND = "never"


@dataclass(frozen=True)
class MenuChoice:
    id: str  # a RewindMode's value, or NEVER_MIND
    label: str
    reason: str | None = None  # why it cannot be chosen (None: it can)


def menu_choices(code_reason: str | None) -> tuple[MenuChoice, ...]:
    """The four choices; ``code_reason``: why the files cannot be restored (None: they can)."""
    return (MenuChoice("both", "Restore code and conversation", code_reason),
            MenuChoice("conversation", "Restore conversation only"),
            MenuChoice("code", "Restore code only", code_reason),
            MenuChoice(NEVER_MIND, "Never mind"))


def plan_summary(plan: RestorePlan) -> str:
    """What restoring the files would do, in one line."""
    if plan.empty:
        return "The files are as they were then: nothing to restore."
    counts = {action: sum(1 for c in plan.changes if c.action == action and c.blocked is None and not c.conflict)
              for action in ("modify", "recreate", "delete")}
    parts = []
    if counts["modify"]:
        parts.append(f"{counts['modify']} to restore")
    if counts["recreate"]:
        parts.append(f"{counts['recreate']} to recreate")
    if counts["delete"]:
        parts.append(f"{counts['delete']} to delete")
    if plan.conflicts:
        parts.append(f"{len(plan.conflicts)} changed outside Loom (left alone unless included)")
    if plan.blocked:
        parts.append(f"{len(plan.blocked)} left alone")
    return "Files: " + " · ".join(parts)


class RewindMenu(PickerScreen):
    """Dismissed with the chosen id; None (Esc) goes back to the list of prompts."""

    DEFAULT_CSS = """
    RewindMenu {
        align: center middle;
    }
    RewindMenu > Vertical {
        width: 90%;
        max-width: 90;
        height: auto;
        max-height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    RewindMenu #prompt-text {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    RewindMenu OptionList {
        height: auto;
        max-height: 14;
    }
    """

    def __init__(self, point: RestorePoint, choices: tuple[MenuChoice, ...], plan: RestorePlan | None, *,
                 note: str | None = None) -> None:
        super().__init__()
        self.point = point
        self.choices = choices
        self.plan = plan
        self.note = note  # a limit of what can be restored, in words

    def compose(self) -> ComposeResult:
        options = []
        for choice in self.choices:
            label = Text(choice.label, style="dim" if choice.reason else "")
            if choice.reason:
                label.append(f"\n  not possible: {choice.reason}", style="dim italic")
            options.append(Option(label, id=choice.id, disabled=choice.reason is not None))
        with Vertical():
            yield Static(Text(f"Rewind to just before prompt {self.point.index} ({when(self.point)})", style="bold"))
            yield Static(Text(f"“{one_line(self.point.text)}”"), id="prompt-text")
            if self.plan is not None:
                yield Static(Text(plan_summary(self.plan), style="dim"), id="plan-summary")
            if self.note:
                yield Static(Text(self.note, style="yellow"), id="note")
            yield OptionList(*options, id="choices")
            yield Static(Text("Enter picks · Esc goes back to the prompts", style="dim"))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        first = next((i for i, c in enumerate(self.choices) if c.reason is None), 0)
        options.highlighted = first
        options.focus()
