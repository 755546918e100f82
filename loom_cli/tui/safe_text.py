"""No control character from outside reaches the terminal through the chat.

Outside text (the model's answer, tool output, file names, MCP results, hook output,
settings shown in a question) reaches many widgets, and more will come; cleaning it
widget by widget is a list someone forgets to extend. So the chat cleans it in the two
places every widget's text goes through, the ones written later included:

1. **Where content is built.** Whatever a widget shows becomes a Rich ``Text`` or a
   Textual ``Content`` before it is measured and wrapped, and both libraries already pass
   the string through one function there (it drops BEL, BS, VT, FF and CR, and lets ESC,
   C1 and bidi controls through). `show_control_characters` makes that function
   `loom_cli.visible_text.visible`: ESC is drawn ``^[``, and because that happens before
   layout, the line wraps around what is really shown.
2. **Where lines are painted.** `ControlCharacterGuard`, a line filter on every line of
   every widget, removes any such character still in a painted line (text a library put
   into a segment without passing it through step 1), drops a hyperlink whose target
   carries one, and drops raw control segments. It removes rather than shows, because the
   line is laid out already: the characters take no cells there and a visible form would
   push the line's end out of sight. It is the wall behind step 1, not the way text is
   meant to be shown.

`SafeTextApp` does both for an app and everything it shows, modal screens included.
Step 1 replaces a module-level function of Rich and Textual; `tests/cli/tui/test_safe_text.py`
fails if an upgrade of either library moves it, and step 2 still holds meanwhile.
"""

from __future__ import annotations

import rich.text
import textual.content
from rich.segment import Segment
from rich.style import Style
from textual.app import App, ReturnType
from textual.color import Color
from textual.filter import LineFilter

from ..visible_text import UNSAFE_CHARACTER, visible, without_unsafe


def show_control_characters() -> None:
    """Make Rich and Textual show control characters (``^[``) where they would strip some
    and pass the others. For the whole process, and idempotent."""
    rich.text.strip_control_codes = visible  # type: ignore[assignment]  # the one-argument call is what they make
    textual.content._strip_control_codes = visible  # type: ignore[assignment]


def _unsafe_link(style: Style | None) -> bool:
    link = style.link if style is not None else None
    return link is not None and UNSAFE_CHARACTER.search(link) is not None


def _made_safe(segment: Segment) -> Segment:
    text, style, _ = segment
    if style is not None and _unsafe_link(style):
        style = style.update_link(None)
    return Segment(without_unsafe(text), style)


class ControlCharacterGuard(LineFilter):
    """Removes from a painted line whatever a terminal would obey (see the module's note)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        # Every line of every widget comes here on each paint, and nearly all pass as they
        # are: a plain loop, stopping at the first segment that needs the slow path.
        search = UNSAFE_CHARACTER.search
        for text, style, control in segments:
            if control or search(text) is not None or (style is not None and _unsafe_link(style)):
                return [_made_safe(segment) for segment in segments if not segment.control]
        return segments


class SafeTextApp(App[ReturnType]):
    """An app whose every screen shows outside text with its control characters visible,
    and sends none of them to the terminal."""

    def __init__(self) -> None:
        super().__init__()
        show_control_characters()
        self._control_guard = ControlCharacterGuard()

    def get_line_filters(self) -> list[LineFilter]:
        return [*super().get_line_filters(), self._control_guard]
