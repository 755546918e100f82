"""Text from outside, made safe to show in a terminal: every control character visible.

Model text, tool output, file names, MCP results and hook output can carry characters a
terminal obeys instead of showing: ESC starts sequences that set the window title (OSC 0),
write the clipboard (OSC 52) or move the cursor; BEL rings; CR and BS move the cursor back
over what was printed; C1 controls (U+0080-U+009F) are one-character escapes to some
terminals; bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069) reorder what follows,
so the screen shows something other than the text. `visible` is the one place that decides
how such a character is shown:

* C0 controls and DEL in caret notation, as ``cat -v`` and most editors show them:
  ESC is ``^[``, BEL ``^G``, BS ``^H``, a lone CR ``^M``, DEL ``^?``;
* C1 controls and the bidi controls as ``<U+009B>``, ``<U+202E>``;
* newline and tab stay, and CR LF is a newline (a Windows line end hides nothing).

The chat applies it where Rich and Textual build their content (`loom_cli.tui.safe_text`);
the command line writes its text output and its stderr through `VisibleWriter`.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

# What a terminal may act on rather than show, as ranges of code points: C0 but tab (09)
# and newline (0A), DEL and C1, the bidi embeddings and overrides, the bidi isolates.
_UNSAFE_RANGES = ((0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0x202A, 0x202E), (0x2066, 0x2069))
UNSAFE_CHARACTER = re.compile("[" + "".join(f"\\u{low:04x}-\\u{high:04x}" for low, high in _UNSAFE_RANGES) + "]")
_UNSAFE_OR_CRLF = re.compile("\r\n|" + UNSAFE_CHARACTER.pattern)


def _shown_as(code: int) -> str:
    if code < 0x20:
        return "^" + chr(code + 0x40)  # ^@ ^A … ^[ ^\ ^] ^^ ^_
    if code == 0x7F:
        return "^?"
    return f"<U+{code:04X}>"


_SHOWN = {"\r\n": "\n"} | {chr(code): _shown_as(code) for low, high in _UNSAFE_RANGES
                           for code in range(low, high + 1)}


def visible(text: str) -> str:
    """``text`` with every character a terminal would obey replaced by a visible form."""
    if UNSAFE_CHARACTER.search(text) is None:
        return text
    return _UNSAFE_OR_CRLF.sub(lambda match: _SHOWN[match.group()], text)


def without_unsafe(text: str) -> str:
    """``text`` without those characters, for the one place that cannot show them: a line
    already laid out, where they take no cells and a visible form would need some."""
    return UNSAFE_CHARACTER.sub("", text)


class VisibleWriter:
    """A text stream that writes what it is given through `visible`.

    A CR at the end of one write is held until the next: ``print()`` writes a line and its
    newline separately, and CR LF must still read as one line end. Anything else (fileno,
    encoding, reconfigure…) is the wrapped stream's. It says it is not a terminal, so
    nothing that checks (Rich, click) sends it colour sequences it would then show.
    """

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream
        self._held_cr = False

    def write(self, text: str) -> int:
        length = len(text)
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if text.endswith("\r"):
            text = text[:-1]
            self._held_cr = True
        self.raw.write(visible(text))
        return length

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        return getattr(self.raw, name)


def raw_stream(stream: TextIO) -> TextIO:
    """The stream under a `VisibleWriter`, for output that is data (JSON escapes its own
    control characters and must reach a program byte for byte)."""
    return stream.raw if isinstance(stream, VisibleWriter) else stream


def visible_stream(stream: TextIO) -> TextIO:
    """``stream`` writing through `visible` (once: a wrapped stream is not wrapped again)."""
    if isinstance(stream, VisibleWriter):
        return stream
    return VisibleWriter(stream)  # type: ignore[return-value]  # a TextIO by what it does


def show_controls_on_standard_streams() -> None:
    """Everything the process prints to stdout and stderr from now on goes through
    `visible`; what is data (JSON) is written to `raw_stream(sys.stdout)`."""
    sys.stdout = visible_stream(sys.stdout)
    sys.stderr = visible_stream(sys.stderr)
