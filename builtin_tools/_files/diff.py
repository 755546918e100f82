"""Unified diffs of two texts, and the changed regions of an edit shown back as numbered lines.

The one diff generator: the edit tools report their changes with it and the TUI renders
what it makes.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from .text import for_display, line_ending, numbered, split_lines, strip_ending


def _range(start: int, length: int) -> str:
    # Unified-diff ranges are 1-based; an empty range names the line before it.
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def unified_diff(old: str, new: str, old_label: str, new_label: str, context: int = 3) -> str:
    """A unified diff of two texts for display; empty when they are equal.

    The common head and tail are cut before difflib runs, so a one-line edit in a
    200,000-line file costs no more than in a short one.
    """
    if old == new:
        return ""
    lo, middle_a, middle_b, matcher = _middle_matcher(split_lines(old), split_lines(new), context)
    out = [f"--- {old_label}\n", f"+++ {new_label}\n"]
    for group in matcher.get_grouped_opcodes(context):
        a_start, a_end = group[0][1] + lo, group[-1][2] + lo
        b_start, b_end = group[0][3] + lo, group[-1][4] + lo
        out.append(f"@@ -{_range(a_start, a_end - a_start)} +{_range(b_start, b_end - b_start)} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_diff_line(" ", line) for line in middle_a[i1:i2])
                continue
            out.extend(_diff_line("-", line) for line in middle_a[i1:i2])
            out.extend(_diff_line("+", line) for line in middle_b[j1:j2])
    return for_display("".join(out))


def _middle_matcher(a: list[str], b: list[str],
                    context: int) -> tuple[int, list[str], list[str], difflib.SequenceMatcher[str]]:
    """A line matcher over the part of ``a`` and ``b`` that differs, plus ``context`` lines.

    Returns the index both slices start at, the slices, and the matcher over them.
    """
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    lo = max(0, head - context)
    a_hi, b_hi = len(a) - max(0, tail - context), len(b) - max(0, tail - context)
    middle_a, middle_b = a[lo:a_hi], b[lo:b_hi]
    # Autojunk keeps a whole-file rewrite of a huge file from going quadratic.
    matcher = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=len(middle_a) + len(middle_b) > 4000)
    return lo, middle_a, middle_b, matcher


def changed_regions(old: str, new: str) -> list[tuple[int, int]]:
    """0-based ``[start, end)`` line ranges of ``new`` that differ from ``old``.

    A pure deletion gives an empty range at the place the lines were removed.
    """
    lo, _, _, matcher = _middle_matcher(split_lines(old), split_lines(new), 0)
    return [(j1 + lo, j2 + lo) for tag, _i1, _i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def snippet(text: str, regions: Sequence[tuple[int, int]], context: int = 3, max_lines: int = 80) -> str:
    """Numbered lines around each region of ``text``, windows merged, at most ``max_lines``."""
    lines = split_lines(text)
    if not lines:
        return "(the file is now empty)"
    windows: list[list[int]] = []
    for start, end in regions:
        lo, hi = max(0, start - context), min(len(lines), max(end, start) + context)
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    parts: list[str] = []
    shown = 0
    note = ""
    for index, (lo, hi) in enumerate(windows):
        if shown >= max_lines:
            note = f"\n... ({len(windows) - index} more edited regions not shown)"
            break
        hi = min(hi, lo + max_lines - shown)
        parts.append(numbered(lines[lo:hi], lo + 1))
        shown += hi - lo
    if not parts:
        return "(the file is now empty)"
    return "\n...\n".join(parts) + note


def _diff_line(sign: str, line: str) -> str:
    body = strip_ending(line)
    if line_ending(line):
        return f"{sign}{body}\n"
    return f"{sign}{body}\n\\ No newline at end of file\n"


def diff_labels(shown: str, created: bool = False, deleted: bool = False) -> tuple[str, str]:
    return ("/dev/null" if created else f"a/{shown}", "/dev/null" if deleted else f"b/{shown}")
