"""visible(): every character a terminal would obey, shown; and the stream that applies it."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loom_cli.visible_text import (
    UNSAFE_CHARACTER,
    VisibleWriter,
    raw_stream,
    visible,
    visible_stream,
    without_unsafe,
)


@pytest.mark.parametrize(("text", "shown"), [
    ("\x1b]0;PWNED\x07", "^[]0;PWNED^G"),  # a window title
    ("\x1b]52;c;Y2xpcA==\x1b\\", "^[]52;c;Y2xpcA==^[\\"),  # a clipboard write, ended by ST
    ("\x1b[2J\x1b[H", "^[[2J^[[H"),  # clear the screen, cursor home
    ("\x00 \x01 \x1a \x1c \x1f", "^@ ^A ^Z ^\\ ^_"),
    ("x\x08y", "x^Hy"),  # backspace over a character
    ("\x0b\x0c", "^K^L"),
    ("\x7f", "^?"),
    ("\x9b2J \x9d0;t\x9c \x85", "<U+009B>2J <U+009D>0;t<U+009C> <U+0085>"),  # C1: CSI, OSC, ST, NEL
    ("\u202eevil\u202c", "<U+202E>evil<U+202C>"),  # right-to-left override
    ("\u202a\u202b\u202d \u2066\u2067\u2068\u2069", "<U+202A><U+202B><U+202D> <U+2066><U+2067><U+2068><U+2069>"),
    ("rm -rf ~\rls       ", "rm -rf ~^Mls       "),  # a lone CR would hide the start of the line
    ("one\r\ntwo\r\n", "one\ntwo\n"),  # a Windows line end is a line end
    ("\r\r\n", "^M\n"),
])
def test_what_a_terminal_would_obey_is_shown(text: str, shown: str) -> None:
    assert visible(text) == shown


@pytest.mark.parametrize("text", [
    "", "plain", "tab\tand\nnewline\n", "é ß 中文 😀 ‏ – ★ │ ⎿", "^[ already visible", "\u200d\u00a0\u00ad",
])
def test_text_without_such_characters_is_unchanged(text: str) -> None:
    assert visible(text) is text


@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_nothing_a_terminal_would_obey_is_left_and_nothing_else_changes(text: str) -> None:
    shown = visible(text)
    assert UNSAFE_CHARACTER.search(shown) is None
    assert "\r" not in shown
    assert visible(shown) == shown  # cleaning twice changes nothing
    # Character by character (CR LF aside): a safe character stays itself.
    assert shown == "\n".join("".join(visible(char) for char in line) for line in text.split("\r\n"))
    assert all(visible(char) == char for char in text if not UNSAFE_CHARACTER.match(char))


def test_without_unsafe_removes_and_keeps_newline_and_tab() -> None:
    assert without_unsafe("a\x1b]0;x\x07\tb\n\u202ec\x9b") == "a]0;x\tb\nc"


def test_the_stream_shows_what_it_is_given_and_joins_a_crlf_split_across_writes() -> None:
    raw = io.StringIO()
    stream = VisibleWriter(raw)
    assert stream.write("a\x1b]0;t\x07 line\r") == len("a\x1b]0;t\x07 line\r")
    stream.write("\n")  # print() writes the newline on its own
    stream.write("lone\r")
    stream.write("cr\n")
    stream.writelines(["x\x08", "y\n"])
    stream.flush()
    assert raw.getvalue() == "a^[]0;t^G line\nlone^Mcr\nx^Hy\n"
    assert stream.isatty() is False  # nothing sends it colour sequences
    assert stream.getvalue() == raw.getvalue()  # the rest is the wrapped stream's


def test_print_through_the_stream() -> None:
    raw = io.StringIO()
    print("title \x1b]0;PWNED\x07", file=visible_stream(raw))
    assert raw.getvalue() == "title ^[]0;PWNED^G\n"


def test_wrapping_is_done_once_and_undone_for_data() -> None:
    raw = io.StringIO()
    wrapped = visible_stream(raw)
    assert visible_stream(wrapped) is wrapped
    assert raw_stream(wrapped) is raw
    assert raw_stream(raw) is raw
