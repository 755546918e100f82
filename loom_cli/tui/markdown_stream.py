"""Streamed markdown that stays cheap however long the answer grows.

Measured with Textual 8.2.8, feeding chunks to the stock `Markdown` widget re-parses the
document, mounts a widget per block and re-highlights an open code fence on every
append, which saturates a core at a couple of hundred chunks a second. This widget
does the opposite:

* `BlockSplitter` (:mod:`.markdown_blocks`) cuts the incoming text into top-level
  markdown blocks as soon as a block is certain to be finished (a blank line followed
  by an unindented line, a closing fence, a heading, the next item of a list). A
  finished block is rendered once (:mod:`.markdown_render`) and its strips are kept.
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

import time

from markdown_it import MarkdownIt
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.timer import Timer

from .markdown_blocks import Block, BlockSplitter, fence_code
from .markdown_render import CodeTheme, code_theme, new_parser, render_code, render_code_lines, render_markdown
from .strip_view import StripView


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
                cache.append(render_code_lines([Text(code[len(cache)], style=theme.plain)], width, console, theme))
            # Same spacing as the finished fence will get, so closing it moves nothing.
            strips = [Strip.blank(0)] if separated else []
            strips.append(Strip.blank(width, theme.background))
            for cached in cache:
                strips.extend(cached)
            if splitter.partial:
                strips.extend(render_code_lines([Text(splitter.partial, style=theme.plain)], width, console, theme))
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
