"""The question a session's end asks about what it learned: the proposed memory notes,
applied all (`a`), some (digits pick, Enter applies them) or none (`s` / Esc)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from loom_engine.memory.promotion import Proposal

from .question_box import box_css


def proposals_text(proposals: Sequence[Proposal], picked: set[int]) -> Text:
    text = Text()
    for number, proposal in enumerate(proposals, 1):
        mark = "[x]" if number - 1 in picked else "[ ]"
        text.append(f"{mark} {number}. ", style="bold" if number - 1 in picked else "")
        text.append(proposal.text)
        text.append(f"  → /memories/{proposal.path}", style="dim")
        if proposal.why:
            text.append(f"  ({proposal.why})", style="dim italic")
        if number < len(proposals):
            text.append("\n")
    return text


class MemoryProposalsScreen(ModalScreen[tuple[int, ...]]):
    """Dismissed with the indexes of the proposals to apply (() for none)."""

    DEFAULT_CSS = box_css("MemoryProposalsScreen", "$accent")

    def __init__(self, proposals: Sequence[Proposal], *, guard_s: float = 1.0) -> None:
        super().__init__()
        self.proposals = tuple(proposals)
        self.picked: set[int] = set()
        self._opened = time.monotonic()
        self._guard_s = guard_s

    def compose(self) -> ComposeResult:
        count = len(self.proposals)
        with Vertical():
            yield Static(Text(f"Remember {'this' if count == 1 else f'these {count} facts'} for later sessions of "
                              "this project?", style="bold"), classes="title")
            yield Static(Text("The model proposes these notes from the session that ends. Nothing is saved "
                              "unless you say so; /memory shows and edits what is kept.", style="dim"))
            with VerticalScroll():
                yield Static(proposals_text(self.proposals, self.picked), id="proposals")
            yield Static(Text.assemble(("a", "bold green"), " apply all   ", ("1-9", "bold"), " pick, ",
                                       ("Enter", "bold"), " apply picked   ", ("s", "bold red"), " / ",
                                       ("Esc", "bold"), " skip"))

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if time.monotonic() - self._opened < self._guard_s:
            return  # keys typed for the prompt just as the box opens are not answers
        if event.key == "a":
            self.dismiss(tuple(range(len(self.proposals))))
        elif event.key in ("s", "escape"):
            self.dismiss(())
        elif event.key == "enter":
            self.dismiss(tuple(sorted(self.picked)))
        elif event.key.isdigit() and 1 <= int(event.key) <= len(self.proposals):
            self.picked ^= {int(event.key) - 1}
            self.query_one("#proposals", Static).update(proposals_text(self.proposals, self.picked))
