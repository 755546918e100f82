"""Large pastes: collapsed to a one-line label in the prompt and the transcript.

A 300-line paste would fill the input box and then the transcript; the user sees
`[pasted text: 300 lines]` instead while the model gets the whole text. A `Draft` is
what the prompt holds: the text as shown (labels included) and the pastes behind its
labels, so a queued or recalled prompt keeps its pastes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PASTE_MAX_LINES = 20
PASTE_MAX_CHARS = 2000


@dataclass(frozen=True)
class Paste:
    label: str  # what the prompt shows, e.g. "[pasted text: 300 lines]"
    text: str


@dataclass(frozen=True)
class Draft:
    """A prompt: ``text`` as the user sees it, ``pastes`` behind the labels in it."""

    text: str
    pastes: tuple[Paste, ...] = ()

    @property
    def expanded(self) -> str:
        """The text the model gets: every label still in the text replaced by its paste."""
        result = self.text
        for paste in self.pastes:
            # Only the first occurrence: a label typed again by hand stays as typed.
            result = result.replace(paste.label, paste.text, 1)
        return result

    @property
    def collapsed(self) -> bool:
        return any(paste.label in self.text for paste in self.pastes)

    def live_pastes(self) -> tuple[Paste, ...]:
        """The pastes whose label the text still holds (a deleted label drops its paste)."""
        return tuple(paste for paste in self.pastes if paste.label in self.text)


def is_large(text: str) -> bool:
    return text.count("\n") + 1 > PASTE_MAX_LINES or len(text) > PASTE_MAX_CHARS


def _lines(text: str) -> int:
    return len(text.rstrip("\n").split("\n"))


def paste_label(text: str, taken: Iterable[str]) -> str:
    """A label for ``text`` that no other paste in the prompt uses."""
    lines = _lines(text)
    size = f"{lines} lines" if lines > 1 else f"{len(text)} characters"
    label = f"[pasted text: {size}]"
    used = set(taken)
    number = 2
    while label in used:
        label = f"[pasted text #{number}: {size}]"
        number += 1
    return label


def merge_drafts(drafts: Sequence[Draft], separator: str = "\n\n") -> Draft:
    """Several queued prompts as one draft; a label used twice is renamed in its draft."""
    texts: list[str] = []
    pastes: list[Paste] = []
    for draft in drafts:
        text = draft.text
        for paste in draft.live_pastes():
            label = paste.label
            if any(p.label == label for p in pastes):
                label = paste_label(paste.text, [p.label for p in pastes])
                text = text.replace(paste.label, label, 1)
            pastes.append(Paste(label, paste.text))
        texts.append(text)
    return Draft(separator.join(texts), tuple(pastes))
