"""Text whose wrapped rows keep their line's indent.

A listed line ("  • allow rule …", "⚠ project settings not applied …", "    npx -y …")
that is too long for a narrow terminal wraps; Rich starts each wrapped row at column
one, which breaks the list's shape at 60 columns. :class:`Hanging` wraps each line after
its lead (its leading spaces, and a bullet or sign followed by a space) and starts every
further row under the line's first word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

# Leading spaces, then at most one short sign (•, ⚠, ⊘, -, 1.) and the space after it.
_LEAD = re.compile(r"^ *(?:(?:[^\w\s]{1,2}|\d{1,2}[.)]) )?")


def lead_width(line: str) -> int:
    """How many characters of ``line`` come before its first word."""
    match = _LEAD.match(line)
    return match.end() if match else 0


class Hanging:
    """``text`` rendered line by line, each line's wrapped rows under its first word. A
    lead wider than half the line is not kept (the words would get too little room)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        width = max(1, options.max_width)
        for line in self.text.split("\n", allow_blank=True):
            lead = lead_width(line.plain)
            pad = cell_len(line.plain[:lead])
            if lead == 0 or pad * 2 > width:
                rows = list(line.wrap(console, width))
                pads = [0] * len(rows)
            else:
                rows = list(line[lead:].wrap(console, width - pad)) or [Text()]
                rows[0] = Text.assemble(line[:lead], rows[0])
                pads = [0] + [pad] * (len(rows) - 1)
            for row, spaces in zip(rows, pads, strict=True):
                if spaces:
                    yield Segment(" " * spaces)
                yield from row.render(console)
                yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)
