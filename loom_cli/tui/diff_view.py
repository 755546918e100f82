"""Coloured unified diffs with line numbers (difflib + Pygments through Rich).

Our own renderer: `textual-diff-view` is AGPL and must not become a dependency.
A diff is parsed once into rows; each hunk side (old = context + removed lines,
new = context + added lines) is highlighted as one text so multi-line constructs
(strings, docstrings) keep their colours, then rows are painted with a gutter of
old/new line numbers, a +/- sign and a tinted background.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.console import Console
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.syntax import Syntax
from rich.text import Text
from textual.strip import Strip

from ..wording import plural
from .strip_view import StripView, fold

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


@dataclass(frozen=True)
class DiffRow:
    kind: str  # context | add | remove | hunk | note
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass(frozen=True)
class ParsedDiff:
    old_path: str
    new_path: str
    rows: tuple[DiffRow, ...]
    added: int
    removed: int

    @property
    def path(self) -> str:
        return self.new_path if self.new_path not in ("", "/dev/null") else self.old_path


def _strip_prefix(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


def parse_unified_diff(diff: str) -> ParsedDiff:
    rows: list[DiffRow] = []
    old_path = new_path = ""
    old_no = new_no = 0
    added = removed = 0
    in_hunk = False
    for line in diff.splitlines():
        if not in_hunk and line.startswith("--- "):
            old_path = _strip_prefix(line[4:])
            continue
        if not in_hunk and line.startswith("+++ "):
            new_path = _strip_prefix(line[4:])
            continue
        match = _HUNK_RE.match(line)
        if match:
            in_hunk = True
            old_no = int(match.group(1))
            new_no = int(match.group(3))
            # A hunk from the first line has nothing above it to stand for.
            if max(old_no, new_no) > 1 or match.group(5).strip():
                rows.append(DiffRow("hunk", match.group(5).strip()))
            continue
        if not in_hunk:
            if line.startswith(("diff ", "index ", "new file", "deleted file", "similarity", "rename")):
                continue
            if line.strip():
                rows.append(DiffRow("note", line))
            continue
        if line.startswith("+"):
            rows.append(DiffRow("add", line[1:], None, new_no))
            new_no += 1
            added += 1
        elif line.startswith("-"):
            rows.append(DiffRow("remove", line[1:], old_no, None))
            old_no += 1
            removed += 1
        elif line.startswith("\\"):
            rows.append(DiffRow("note", line[1:].strip()))
        elif line.startswith("--- ") or line.startswith("diff "):
            # A multi-file patch: the next file starts.
            in_hunk = False
            if line.startswith("--- "):
                old_path = _strip_prefix(line[4:])
        else:
            text = line[1:] if line.startswith(" ") else line
            rows.append(DiffRow("context", text, old_no, new_no))
            old_no += 1
            new_no += 1
    return ParsedDiff(old_path, new_path, tuple(rows), added, removed)


@dataclass(frozen=True)
class DiffPalette:
    add_bg: RichStyle
    remove_bg: RichStyle
    add_sign: RichStyle
    remove_sign: RichStyle
    gutter: RichStyle
    hunk: RichStyle
    note: RichStyle
    code_theme: str


def diff_palette(dark: bool) -> DiffPalette:
    if dark:
        return DiffPalette(RichStyle(bgcolor="#143d23"), RichStyle(bgcolor="#4a1d22"),
                           RichStyle(color="#5fd787", bold=True), RichStyle(color="#ff7b8a", bold=True),
                           RichStyle(color="#7a7f88"), RichStyle(color="#6cb6ff", dim=True),
                           RichStyle(color="#9da5b4", italic=True), "monokai")
    return DiffPalette(RichStyle(bgcolor="#dcf5e3"), RichStyle(bgcolor="#fbe0e2"),
                       RichStyle(color="#1a7f37", bold=True), RichStyle(color="#cf222e", bold=True),
                       RichStyle(color="#8c959f"), RichStyle(color="#0969da", dim=True),
                       RichStyle(color="#57606a", italic=True), "default")


def _lexer_for(path: str) -> str | None:
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(path).aliases[0]
    except (ClassNotFound, IndexError):
        return None


def _highlight_rows(parsed: ParsedDiff, code_theme: str) -> list[Text]:
    """One highlighted Text per row; each hunk side is highlighted as a whole."""
    texts = [Text(row.text) for row in parsed.rows]
    lexer = _lexer_for(parsed.path) if parsed.path else None
    if lexer is None:
        return texts
    syntax = Syntax("", lexer, theme=code_theme)

    def paint(indices: list[int]) -> None:
        if not indices:
            return
        code = "\n".join(parsed.rows[i].text for i in indices)
        lines = syntax.highlight(code).split("\n", allow_blank=True)
        for i, line in zip(indices, lines, strict=False):
            line.style = ""  # keep our row background, only token colours
            texts[i] = line

    old_side: list[int] = []
    new_side: list[int] = []
    for index, row in enumerate(parsed.rows):
        if row.kind == "hunk":
            paint(old_side)
            paint(new_side)
            old_side, new_side = [], []
        elif row.kind == "context":
            old_side.append(index)
            new_side.append(index)
        elif row.kind == "remove":
            old_side.append(index)
        elif row.kind == "add":
            new_side.append(index)
    paint(old_side)
    paint(new_side)
    return texts


def render_diff(parsed: ParsedDiff, width: int, console: Console, palette: DiffPalette,
                max_rows: int | None = None) -> list[Strip]:
    rows = parsed.rows
    texts = _highlight_rows(parsed, palette.code_theme)
    numbers = [n for row in rows for n in (row.old_no, row.new_no) if n is not None]
    digits = max(3, len(str(max(numbers)))) if numbers else 3
    gutter_width = digits * 2 + 4  # "old new s "
    code_width = max(10, width - gutter_width)
    strips: list[Strip] = []
    shown = rows if max_rows is None else rows[:max_rows]
    for row, text in zip(shown, texts, strict=False):
        if row.kind == "hunk":
            label = "⋯" + (f" {row.text}" if row.text else "")
            strips.append(Strip([Segment(" " * (digits * 2 + 2) + label, palette.hunk)]).crop(0, width))
            continue
        if row.kind == "note":
            strips.append(Strip([Segment(" " * (digits * 2 + 2) + row.text, palette.note)]).crop(0, width))
            continue
        if row.kind == "add":
            background, sign, sign_style = palette.add_bg, "+", palette.add_sign
        elif row.kind == "remove":
            background, sign, sign_style = palette.remove_bg, "-", palette.remove_sign
        else:
            background, sign, sign_style = RichStyle(), " ", palette.gutter
        old = str(row.old_no) if row.old_no is not None else ""
        new = str(row.new_no) if row.new_no is not None else ""
        gutter = [Segment(f"{old:>{digits}} {new:>{digits}} ", palette.gutter), Segment(f"{sign} ", sign_style)]
        text.expand_tabs(4)
        pieces = fold(text, code_width, console)
        for index, piece in enumerate(pieces or [Text("")]):
            lead = gutter if index == 0 else [Segment(" " * gutter_width, palette.gutter)]
            segments = Segment.apply_style([*lead, *piece.render(console)], background)
            strip = Strip(segments)
            if row.kind != "context":
                strip = strip.extend_cell_length(width, background)
            strips.append(strip)
    if max_rows is not None and len(rows) > max_rows:
        strips.append(Strip([Segment(f"  … {plural(len(rows) - max_rows, 'more diff line')}", palette.note)]))
    return strips


class DiffView(StripView):
    """A unified diff, coloured, with old/new line numbers."""

    DEFAULT_CSS = """
    DiffView {
        height: auto;
        padding: 0 0 0 0;
    }
    """

    def __init__(self, diff: str, *, max_rows: int | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.parsed = parse_unified_diff(diff)
        self.max_rows = max_rows

    def set_max_rows(self, max_rows: int | None) -> None:
        self.max_rows = max_rows
        self.invalidate()

    def build_lines(self, width: int) -> list[Strip]:
        palette = diff_palette(self.app.current_theme.dark)
        return render_diff(self.parsed, width, self.app.console, palette, self.max_rows)
