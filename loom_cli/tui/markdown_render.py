"""Rich's markdown and code rendering as the streamed answer draws it: flush-left
headings, numbered and task-list items, code fences on the theme's background, and the
highlighter warmed up ahead of the first fence."""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Heading as RichHeading
from rich.markdown import ListItem as RichListItem
from rich.markdown import Markdown as RichMarkdown
from rich.markdown import MarkdownContext, MarkdownElement
from rich.markdown import Paragraph as RichParagraph
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.syntax import Syntax
from rich.text import Text
from textual.strip import Strip

from .strip_view import StripView, fold, render_rich


class _LeftHeading(RichHeading):
    """Headings flush left: centred titles look lost in a chat transcript."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        yield text


# A task list item (GitHub's "- [ ] todo", "- [x] done"): its box, as the todo panel draws one.
_TASK_RE = re.compile(r"\[([ xX])\] ")
_TASK_BOXES = {" ": "☐", "x": "☑", "X": "☑"}


class _ListItem(RichListItem):
    """Ordered items keep their dot ("1. "), as the model wrote them; a task item shows
    its box instead of "[ ]" or "[x]" (in place of the bullet, or after the number)."""

    box = ""
    _started = False  # its first block is in (only that one can open with the task's box)

    def on_child_close(self, context: MarkdownContext, child: MarkdownElement) -> bool:
        if not self._started and isinstance(child, RichParagraph):
            task = _TASK_RE.match(child.text.plain)
            if task is not None:
                self.box = _TASK_BOXES[task.group(1)]
                child.text = child.text[task.end():]
        self._started = True
        return super().on_child_close(context, child)

    def render_bullet(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.box:
            yield from super().render_bullet(console, options)
            return
        lines = console.render_lines(self.elements, options.update(width=options.max_width - 3), style=self.style)
        style = console.get_style("markdown.item.bullet", default="none")
        box, padding = Segment(f" {self.box} ", style), Segment("   ", style)
        for index, line in enumerate(lines):
            yield box if index == 0 else padding
            yield from line
            yield Segment("\n")

    def render_number(self, console: Console, options: ConsoleOptions, number: int,
                      last_number: int) -> RenderResult:
        width = len(str(last_number)) + 3 + (2 if self.box else 0)
        lines = console.render_lines(self.elements, options.update(width=options.max_width - width),
                                     style=self.style)
        style = console.get_style("markdown.item.number", default="none")
        box = f"{self.box} " if self.box else ""
        numeral = Segment(f"{number}.".rjust(width - 1 - len(box)) + " " + box, style)
        padding = Segment(" " * width, style)
        for index, line in enumerate(lines):
            yield numeral if index == 0 else padding
            yield from line
            yield Segment("\n")


class _Markdown(RichMarkdown):
    elements = {**RichMarkdown.elements, "heading_open": _LeftHeading, "list_item_open": _ListItem}

    def __init__(self, markup: str, parser: MarkdownIt, code_theme: str) -> None:
        # Rich builds a new MarkdownIt parser per document (about 0.7 ms); a stream
        # renders hundreds of small documents, so it brings its own parser.
        self.markup = markup
        self.parsed = parser.parse(markup)
        self.code_theme = code_theme
        self.justify = None
        self.style = "none"
        self.hyperlinks = True
        self.inline_code_lexer = None
        self.inline_code_theme = code_theme


def new_parser() -> MarkdownIt:
    return MarkdownIt().enable("strikethrough").enable("table")


def render_markdown(widget: StripView, text: str, width: int, code_theme_name: str,
                    parser: MarkdownIt | None = None) -> list[Strip]:
    """Rich's markdown rendering without the blank lines it puts around blocks."""
    strips = render_rich(widget, _Markdown(text, parser or new_parser(), code_theme_name), width)
    start, end = 0, len(strips)
    while start < end and not strips[start].text.strip():
        start += 1
    while end > start and not strips[end - 1].text.strip():
        end -= 1
    return strips[start:end]


@dataclass(frozen=True)
class CodeTheme:
    name: str
    background: RichStyle
    plain: RichStyle


def code_theme(dark: bool) -> CodeTheme:
    name = "monokai" if dark else "default"
    theme = Syntax.get_theme(name)
    background = theme.get_background_style()
    return CodeTheme(name, background, background + RichStyle(color=None))


def render_code_lines(lines: list[Text], width: int, console: Console, theme: CodeTheme) -> list[Strip]:
    """Code lines folded at ``width - 2`` with a one-cell padding, on the theme's background."""
    inner = max(1, width - 2)
    pad = Segment(" ", theme.background)
    strips: list[Strip] = []
    for text in lines:
        text.expand_tabs(4)
        pieces = fold(text, inner, console)
        for piece in pieces or [Text("")]:
            segments = [pad, *piece.render(console), pad]
            strip = Strip(Segment.apply_style(segments, theme.background))
            strips.append(strip.extend_cell_length(width, theme.background))
    return strips


def render_code(code_lines: list[str], lang: str, width: int, console: Console, theme: CodeTheme,
                highlight: bool) -> list[Strip]:
    """A fenced code block with a blank background line above and below."""
    if highlight and lang:
        highlighted = Syntax("", lang, theme=theme.name).highlight("\n".join(code_lines))
        texts = list(highlighted.split("\n", allow_blank=True))
        texts = texts[: len(code_lines)] or [Text("")]
    else:
        texts = [Text(line, style=theme.plain) for line in code_lines]
    blank = Strip.blank(width, theme.background)
    return [blank, *render_code_lines(texts, width, console, theme), blank]


WARM_LANGUAGES = ("python", "json", "bash", "javascript", "typescript", "diff", "yaml", "toml", "rust", "go")


def warm_up_highlighting(languages: tuple[str, ...] = WARM_LANGUAGES) -> None:
    """Import Pygments' lexers and themes ahead of time (safe in a worker thread).

    The first fence in a language otherwise imports its lexer module on the UI loop,
    a visible stall in the middle of a stream.
    """
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    for name in languages:
        try:
            get_lexer_by_name(name)
        except ClassNotFound:
            continue
    for theme in ("monokai", "default", "ansi_dark"):
        Syntax.get_theme(theme)
