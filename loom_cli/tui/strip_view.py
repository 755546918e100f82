"""StripView: a line-API widget that paints pre-rendered strips.

Transcript blocks render their content once into `Strip`s for a given width and then
only index into that list when Textual asks for a line. That keeps repaint and layout
cheap (no renderable is re-measured on every frame) and lets a streaming widget change
only its last lines. Text selection and copy are supported: every painted line carries
the offsets Textual's selection machinery reads, and `get_selection` returns the plain
text of the rendered lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Self

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget


def render_rich(widget: Widget, renderable: RenderableType, width: int) -> list[Strip]:
    """Render a Rich renderable into strips of at most ``width`` cells."""
    if width <= 0:
        return []
    app = widget.app
    options = app.console_options.update(highlight=False, width=width, height=None)
    segments = app.console.render(renderable, options)
    return [
        Strip(line)
        for line in Segment.split_and_crop_lines(segments, width, include_new_lines=False, pad=False)
    ]


def fold(text: Text, width: int, console: Console) -> list[Text]:
    """Cut a line of code into pieces of ``width`` cells, wherever the cut falls.

    Code keeps its layout (no word wrapping); wide characters fall back to Rich's folding.
    """
    if text.cell_len <= width:
        return [text]
    if text.cell_len == len(text.plain):
        return list(text.divide(range(width, len(text.plain), width)))
    return list(text.wrap(console, width, overflow="fold", no_wrap=False))


def selection_span(strip: Strip, span: tuple[int, int]) -> Strip:
    """``strip`` with the characters in ``span`` drawn in reverse video."""
    start, end = span
    length = len(strip.text)
    if end == -1 or end > length:
        end = length
    if start >= end:
        return strip
    cell_start = strip.index_to_cell_position(start)
    cell_end = strip.index_to_cell_position(end)
    before, middle, after = strip.divide([cell_start, cell_end, strip.cell_length])[:3]
    highlight = RichStyle(reverse=True)
    return Strip.join([before, Strip(Segment.apply_style(list(middle), post_style=highlight)), after])


class StripView(Widget):
    """Base for blocks that hold their rendering as a list of strips."""

    DEFAULT_CSS = """
    StripView {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Strip] = []
        self._lines_width = -1
        # Painted lines (padded, styled, with selection offsets) for the current width and
        # base style; Textual asks for the same lines again on every scroll.
        self._painted: dict[int, Strip] = {}
        self._painted_key: tuple[int, Any] | None = None
        self._base_style: RichStyle | None = None

    # --- to implement --------------------------------------------------------------

    def build_lines(self, width: int) -> list[Strip]:
        """Render the whole content for ``width`` cells."""
        raise NotImplementedError

    # --- rendering -----------------------------------------------------------------

    def invalidate(self) -> None:
        """Content changed in a way that needs a full re-render."""
        self._lines_width = -1
        self.refresh(layout=True)

    def ensure_lines(self, width: int) -> list[Strip]:
        if width != self._lines_width:
            self._lines = self.build_lines(width) if width > 0 else []
            self._lines_width = width
            self._painted.clear()
        return self._lines

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.ensure_lines(width))

    def notify_style_update(self) -> None:
        self._base_style = None
        super().notify_style_update()

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Self:
        if repaint:
            if regions:
                for region in regions:
                    for y in range(region.y, region.bottom):
                        self._painted.pop(y, None)
            else:
                self._painted.clear()
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        lines = self.ensure_lines(width)
        base = self._base_style
        if base is None:
            base = self._base_style = self.rich_style
        if (width, base) != self._painted_key:
            self._painted.clear()
            self._painted_key = (width, base)
        selection = self.text_selection
        if selection is None:
            painted = self._painted.get(y)
            if painted is not None:
                return painted
        if y >= len(lines):
            return Strip.blank(width, base)
        strip = lines[y]
        if selection is not None:
            span = selection.get_span(y)
            if span is not None:
                strip = selection_span(strip, span)
        painted = strip.crop_extend(0, width, base).apply_style(base).apply_offsets(0, y)
        if selection is None:
            self._painted[y] = painted
        return painted

    # --- selection -----------------------------------------------------------------

    def plain_lines(self) -> Iterable[str]:
        return (line.text.rstrip() for line in self._lines)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self.plain_lines())), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def on_resize(self) -> None:
        # A width change re-wraps everything; the next paint rebuilds for the new width.
        if self.content_size.width != self._lines_width:
            self._lines_width = -1
