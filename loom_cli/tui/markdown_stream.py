"""Streamed markdown that stays cheap however long the answer grows.

Measured with Textual 8.2.8, feeding chunks to the stock `Markdown` widget re-parses the
document, mounts a widget per block and re-highlights an open code fence on every
append, which saturates a core at a couple of hundred chunks a second. This widget
does the opposite:

* `BlockSplitter` cuts the incoming text into top-level markdown blocks as soon as a
  block is certain to be finished (a blank line followed by an unindented line, a
  closing fence, a heading, the next item of a list). A finished block is rendered
  once and its strips are kept.
* Only the open tail is rendered again, at most `max_fps` times a second, however
  many chunks arrived in between.
* An open code fence is drawn as plain text, one cached line at a time; it is
  highlighted once, when it closes. Plain and highlighted fences share one geometry,
  so closing a fence recolours it without moving anything.
* The widget is one line-API widget per answer segment, so a long answer adds one
  widget to the layout, not one per paragraph. (Splitting it into sealed parts was
  measured: every container is one more layer the compositor repaints per frame, which
  cost more than it saved.)
"""

from __future__ import annotations

import re
import time
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
from textual.geometry import Region
from textual.strip import Strip
from textual.timer import Timer

from .strip_view import StripView, fold, render_rich

_FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_LIST_RE = re.compile(r"^ {0,3}([*+-]|\d{1,9}[.)])(\s|$)")
_QUOTE_RE = re.compile(r"^ {0,3}>")
_TABLE_RE = re.compile(r"^ {0,3}\|")


@dataclass(frozen=True)
class Block:
    """One finished top-level markdown block."""

    text: str
    kind: str  # prose | list | fence | heading | quote | table
    # Follows the previous block without a blank line (items of one tight list).
    tight: bool = False
    lang: str = ""


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _kind_of(line: str) -> str:
    if _FENCE_RE.match(line) and _indent(line) <= 3:
        return "fence"
    if _HEADING_RE.match(line):
        return "heading"
    if _LIST_RE.match(line):
        return "list"
    if _QUOTE_RE.match(line):
        return "quote"
    if _TABLE_RE.match(line):
        return "table"
    return "prose"


class BlockSplitter:
    """Incrementally splits markdown text into finished blocks and an open tail."""

    def __init__(self) -> None:
        self._partial = ""
        self._lines: list[str] = []
        self._kind = ""
        self._tight = False
        self._lang = ""
        self._blank_pending = False
        self._fence: tuple[str, int] | None = None  # marker char and length of the open fence
        self._fence_top = False  # the open block is itself a fence
        self._source_len = 0

    # --- feeding ------------------------------------------------------------------

    def feed(self, text: str) -> list[Block]:
        self._source_len += len(text)
        if "\n" not in text:
            self._partial += text
            done: list[Block] = []
            self._settle_partial(done)
            return done
        data = self._partial + text
        *complete, self._partial = data.split("\n")
        done = []
        for line in complete:
            self._line(line, done)
        self._settle_partial(done)
        return done

    def _settle_partial(self, done: list[Block]) -> None:
        """Close the open block as soon as the next line's start shows it is a new block.

        After a blank line, the first visible character of the next line decides: an
        unindented start can only begin a new block, so the previous one is final and
        need not wait for the rest of the line.
        """
        if not (self._blank_pending and self._lines and self._fence is None and self._partial.strip()):
            return
        indent = _indent(self._partial)
        if indent >= 4 or (self._kind == "list" and indent >= 2):
            return
        done.append(self._take())

    def finish(self) -> list[Block]:
        done: list[Block] = []
        if self._partial:
            partial, self._partial = self._partial, ""
            self._line(partial, done)
        if self._lines:
            done.append(self._take())
        return done

    # --- the open tail --------------------------------------------------------------

    @property
    def partial(self) -> str:
        return self._partial

    @property
    def open_kind(self) -> str:
        return self._kind if self._lines else (_kind_of(self._partial) if self._partial else "")

    @property
    def in_top_fence(self) -> bool:
        return bool(self._lines) and self._fence_top and self._fence is not None

    @property
    def open_lang(self) -> str:
        return self._lang

    @property
    def open_lines(self) -> list[str]:
        """Complete lines of the open block (the list is live; do not modify it)."""
        return self._lines

    @property
    def open_tight(self) -> bool:
        return self._tight if self._lines else False

    def tail_text(self) -> str:
        if not self._lines:
            return self._partial
        body = "\n".join(self._lines)
        if not self._partial:
            return body
        return body + ("\n\n" if self._blank_pending else "\n") + self._partial

    # --- line state machine ---------------------------------------------------------

    def _take(self) -> Block:
        block = Block("\n".join(self._lines), self._kind, self._tight, self._lang)
        self._lines = []
        self._kind = ""
        self._lang = ""
        self._tight = False
        self._fence = None
        self._fence_top = False
        self._blank_pending = False
        return block

    def _start(self, line: str, tight: bool, done: list[Block]) -> None:
        kind = _kind_of(line)
        if kind == "heading":
            done.append(Block(line, "heading", False))
            return
        self._lines = [line]
        self._kind = kind
        self._tight = tight
        if kind == "fence":
            match = _FENCE_RE.match(line)
            assert match is not None
            marker = match.group(2)
            self._fence = (marker[0], len(marker))
            self._fence_top = True
            self._lang = match.group(3)

    def _closes_fence(self, line: str) -> bool:
        assert self._fence is not None
        char, length = self._fence
        stripped = line.strip()
        return len(stripped) >= length and stripped == char * len(stripped)

    def _line(self, line: str, done: list[Block]) -> None:
        if self._fence is not None:
            self._lines.append(line)
            if self._closes_fence(line):
                self._fence = None
                if self._fence_top:
                    done.append(self._take())
            return
        if not line.strip():
            if self._lines:
                self._blank_pending = True
            return
        indent = _indent(line)
        if self._lines and self._blank_pending:
            self._blank_pending = False
            continues = indent >= 4 or (self._kind == "list" and indent >= 2)
            if not continues:
                done.append(self._take())
                self._start(line, False, done)
                return
            self._lines.append("")
            self._append(line)
            return
        if not self._lines:
            self._start(line, False, done)
            return
        kind = _kind_of(line) if indent <= 3 else "prose"
        if kind in ("fence", "heading"):
            done.append(self._take())
            self._start(line, False, done)
        elif kind == "list" and indent <= 1 and self._kind in ("list", "prose", "quote"):
            tight = self._kind == "list"
            done.append(self._take())
            self._start(line, tight, done)
        else:
            self._append(line)

    def _append(self, line: str) -> None:
        self._lines.append(line)
        match = _FENCE_RE.match(line)
        if match is not None:
            marker = match.group(2)
            self._fence = (marker[0], len(marker))


# --- rendering ------------------------------------------------------------------------


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


def _code_lines(lines: list[Text], width: int, console: Console, theme: CodeTheme) -> list[Strip]:
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
    return [blank, *_code_lines(texts, width, console, theme), blank]


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


def fence_code(block_text: str) -> list[str]:
    """The code lines of a top-level fence block (opener and, if present, closer removed)."""
    lines = block_text.split("\n")[1:]
    if lines:
        last = lines[-1].strip()
        if len(last) >= 3 and last == last[0] * len(last) and last[0] in "`~":
            lines = lines[:-1]
    return lines


class MarkdownStream(StripView):
    """An assistant answer segment: append chunks while streaming, `finish` when done."""

    DEFAULT_CSS = """
    MarkdownStream {
        height: auto;
        padding: 0 1 0 2;
    }
    """

    def __init__(self, text: str = "", *, max_fps: float = 10.0, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._splitter = BlockSplitter()
        # Finished blocks, each with whether a blank line goes before it.
        self._blocks: list[tuple[Block, bool]] = []
        self._rendered = 0  # blocks already in _done_lines
        self._done_lines: list[Strip] = []
        self._fence_cache: list[list[Strip]] = []  # open fence: strips per complete code line
        self._finished = False
        self._source: list[str] = []
        self._interval = 1.0 / max_fps
        self._last_flush = 0.0
        self._timer: Timer | None = None
        self._theme: CodeTheme | None = None
        self._parser: MarkdownIt | None = None
        self.flushes = 0
        if text:
            self.append(text)
            self.finish()

    # --- public API ------------------------------------------------------------------

    @property
    def source(self) -> str:
        return "".join(self._source)

    @property
    def finished(self) -> bool:
        return self._finished

    def append(self, text: str) -> None:
        """Add streamed text; the screen catches up at most `max_fps` times a second."""
        if not text or self._finished:
            return
        self._source.append(text)
        self._place(self._splitter.feed(text))
        if not self.is_mounted:
            return
        if self._timer is None:
            delay = self._last_flush + self._interval - time.monotonic()
            if delay <= 0:
                self._flush()
            else:
                self._timer = self.set_timer(delay, self._flush)

    def finish(self) -> None:
        """The segment is complete: render what is left, highlight fences, go static."""
        if self._finished:
            return
        self._place(self._splitter.finish())
        self._finished = True
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.is_mounted:
            self._flush()

    def reset(self) -> None:
        """Drop everything shown (a retried stream replaces its partial output)."""
        self._splitter = BlockSplitter()
        self._blocks.clear()
        self._rendered = 0
        self._done_lines = []
        self._fence_cache = []
        self._source.clear()
        self._finished = False
        self.invalidate()

    def on_mount(self) -> None:
        if self._source:
            self._flush()

    def lines(self) -> list[Strip]:
        return self._lines

    def plain_text(self) -> str:
        return "\n".join(self.plain_lines())

    # --- rendering --------------------------------------------------------------------

    def _place(self, blocks: list[Block]) -> None:
        for block in blocks:
            self._blocks.append((block, bool(self._blocks) and not block.tight))

    def _code_theme(self) -> CodeTheme:
        if self._theme is None:
            self._theme = code_theme(self.app.current_theme.dark)
        return self._theme

    def _markdown(self, text: str, width: int) -> list[Strip]:
        if self._parser is None:
            self._parser = new_parser()
        return render_markdown(self, text, width, self._code_theme().name, self._parser)

    def _render_block(self, block: Block, width: int) -> list[Strip]:
        if block.kind == "fence":
            return render_code(fence_code(block.text), block.lang, width, self.app.console,
                               self._code_theme(), highlight=True)
        return self._markdown(block.text, width)

    def _render_new_blocks(self, width: int) -> None:
        for block, separated in self._blocks[self._rendered:]:
            if separated:
                self._done_lines.append(Strip.blank(0))
            self._done_lines.extend(self._render_block(block, width))
            self._fence_cache.clear()
        self._rendered = len(self._blocks)

    def _render_tail(self, width: int) -> list[Strip]:
        splitter = self._splitter
        if self._finished:
            return []
        separated = bool(self._blocks) and not splitter.open_tight
        if splitter.in_top_fence:
            theme = self._code_theme()
            code = splitter.open_lines[1:]
            console = self.app.console
            cache = self._fence_cache
            # Complete lines never change until the fence closes: render each once.
            while len(cache) < len(code):
                cache.append(_code_lines([Text(code[len(cache)], style=theme.plain)], width, console, theme))
            # Same spacing as the finished fence will get, so closing it moves nothing.
            strips = [Strip.blank(0)] if separated else []
            strips.append(Strip.blank(width, theme.background))
            for cached in cache:
                strips.extend(cached)
            if splitter.partial:
                strips.extend(_code_lines([Text(splitter.partial, style=theme.plain)], width, console, theme))
            return strips
        self._fence_cache.clear()
        tail = splitter.tail_text()
        if not tail.strip():
            return []
        strips = self._markdown(tail, width)
        if separated:
            strips.insert(0, Strip.blank(0))
        return strips

    def build_lines(self, width: int) -> list[Strip]:
        # Full rebuild (first paint or a new width).
        self._done_lines = []
        self._rendered = 0
        self._fence_cache = []
        self._render_new_blocks(width)
        return self._done_lines + self._render_tail(width)

    def _flush(self) -> None:
        self._timer = None
        self._last_flush = time.monotonic()
        self.flushes += 1
        width = self.content_size.width
        if width <= 0 or self._lines_width != width:
            # Not laid out yet (or resized): the next layout renders everything.
            self.invalidate()
            return
        old_count = len(self._lines)
        first_changed = len(self._done_lines)
        self._render_new_blocks(width)
        self._lines = self._done_lines + self._render_tail(width)
        if len(self._lines) != old_count:
            self.refresh(layout=True)
        else:
            self.refresh(Region(0, first_changed, width, max(1, len(self._lines) - first_changed)))
