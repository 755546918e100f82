"""The words for how much of a tool's output there was and how much shows.

A huge output reaches the block as the cut copy the model saw (its head and its tail),
with the real size in the call's display fields. Every count the block prints is of the
real output's lines, so this module is the one place that words them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..wording import plural


def _count(display: Mapping[str, Any], key: str) -> int | None:
    value = display.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def real_line_count(display: Mapping[str, Any] | None) -> int | None:
    """How many lines the call really printed, when the tool said so."""
    return _count(display, "output_lines") if display else None


def output_size(display: Mapping[str, Any] | None, *, short: bool = False) -> str:
    """The real size of a call's output, and whether the model saw only its head and tail
    (``short``: only that it was cut, for a narrow header)."""
    total = real_line_count(display)
    if display is None or total is None:
        return ""
    if not display.get("truncated"):
        return plural(total, "line")
    if short:
        return f"{plural(total, 'line')} · cut"
    return f"{plural(total, 'line')} · {what_the_model_saw(display)}"


def what_the_model_saw(display: Mapping[str, Any]) -> str:
    head, tail = _count(display, "shown_head_lines"), _count(display, "shown_tail_lines")
    if head is None or tail is None:
        return "the model saw the start and the end"
    return f"the model saw the first {head:,} and last {tail:,}"


def shown_of_total(shown: int, total: int) -> str:
    """Under a block that shows the first ``shown`` of ``total`` lines."""
    return f"… showing {shown:,} of {plural(total, 'line')}"


def lines_above(count: int) -> str:
    """Over the last lines of a command still running: how many scrolled away."""
    return f"… {plural(count, 'line')} above"
