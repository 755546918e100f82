"""The chat's seam for outside text: Rich and Textual build their content through
`visible`, and a line filter removes whatever still slips through to a painted line.

The first tests fail if an upgrade of Rich or Textual moves the function they clean
strings with (then the chat would fall back on the filter: safe, but ESC would vanish
instead of showing as ^[)."""

from __future__ import annotations

import re

from rich.segment import ControlType, Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.color import Color
from textual.content import Content
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from loom_cli.tui.safe_text import ControlCharacterGuard, SafeTextApp, show_control_characters
from loom_cli.visible_text import UNSAFE_CHARACTER

ATTACK = "a\x1b]0;PWNED\x07b\rc\x08d\x9be\u202ef"
SHOWN = "a^[]0;PWNED^Gb^Mc^Hd<U+009B>e<U+202E>f"


def test_rich_text_is_built_with_control_characters_shown() -> None:
    show_control_characters()
    assert Text(ATTACK).plain == SHOWN
    text = Text("x")
    text.append(ATTACK, style="bold")
    assert text.plain == "x" + SHOWN
    assert Text.assemble(("y", "dim"), ATTACK).plain == "y" + SHOWN
    assert Text.from_markup("[b]z[/b]" + ATTACK.replace("[", "")).plain == "z" + SHOWN
    changed = Text("")
    changed.plain = ATTACK
    assert changed.plain == SHOWN
    assert Text("one\r\ntwo").plain == "one\ntwo"


def test_textual_content_is_built_with_control_characters_shown() -> None:
    show_control_characters()
    assert Content(ATTACK).plain == SHOWN
    assert Content.styled(ATTACK, "bold").plain == SHOWN
    assert Content.from_markup("[b]z[/b] $value", value=ATTACK).plain == "z " + SHOWN
    assert Content.from_rich_text(Text(ATTACK)).plain == SHOWN


def test_the_guard_passes_a_clean_line_as_it_is() -> None:
    segments = [Segment("plain ", Style(bold=True)), Segment("text\t", None), Segment("link", Style(link="https://x"))]
    assert ControlCharacterGuard().apply(segments, Color(0, 0, 0)) is segments


def test_the_guard_removes_what_slipped_through() -> None:
    segments = [Segment("a\x1b]0;PWNED\x07b", Style(bold=True)),
                Segment("here", Style(link="https://x/\x1b]0;PWNED\x07")),
                Segment("\x1b[2J", None, [(ControlType.CLEAR,)]),  # a raw control segment
                Segment("\u202eend\x9b", None)]
    cleaned = ControlCharacterGuard().apply(segments, Color(0, 0, 0))
    assert [segment.text for segment in cleaned] == ["a]0;PWNEDb", "here", "end"]
    assert cleaned[0].style == Style(bold=True)
    assert cleaned[1].style is not None and not cleaned[1].style.link  # the link goes, the text stays


class RawPainter(Widget):
    """A widget that paints its own segments, past Rich's Text and Textual's Content."""

    def render_line(self, y: int) -> Strip:
        return Strip([Segment(f"row {y} \x1b]0;PWNED\x07 \x1b]52;c;Y2xpcA==\x1b\\ end")])


class Host(SafeTextApp[None]):
    def compose(self) -> ComposeResult:
        yield Static(Text(ATTACK), id="static")
        yield Static(ATTACK, id="markup", markup=False)
        yield RawPainter()


class PlainHost(App[None]):
    def compose(self) -> ComposeResult:
        yield RawPainter()


_OWN = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def _written(app: App[None]) -> str:
    """What the app writes to the terminal to draw its whole screen."""
    update = app.screen._compositor.render_update(full=True)
    assert update is not None
    return update.render_segments(app.console)  # type: ignore[union-attr]


async def test_no_widget_of_a_safe_app_writes_a_control_character_to_the_terminal() -> None:
    async with PlainHost().run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        assert "\x1b]0;PWNED" in _written(pilot.app)  # what the filter is there for
    async with Host().run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        written = _written(pilot.app)
        assert UNSAFE_CHARACTER.findall(_OWN.sub("", written)) == []
        assert SHOWN in written  # the widgets that build text show it
        assert "row 0 ]0;PWNED ]52;c;Y2xpcA==\\ end" in written  # the raw painter's escapes are gone
