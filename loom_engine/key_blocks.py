"""Finding private-key material in text shown line by line, whatever is in front of it.

The shape regex in ``redact`` catches a key block that is printed as it sits in its
file. Tools rarely show it that way: ``read_file`` and ``cat -n`` put a line number and
a tab before each line, ``grep``/``rg`` put ``path:12:`` or ``path-13-`` before it, a diff
a ``+``, a JSON transcript turns the line breaks into ``\\n``; and a window (an offset,
a limit, ``grep -A3``, ``tail``) may show a BEGIN without its END, an END without its
BEGIN, or only lines from the middle. So this pass reads the text line by line:

* after a ``-----BEGIN … PRIVATE KEY-----`` line, up to its END or the end of the text,
  the key material of every line goes (the base64 at the end of each line, and any
  long base64 run elsewhere on it);
* before an END line with no BEGIN above it, back to the previous marker or the start
  of the text, the same;
* where no marker says what a line belongs to, a line whose body is exactly 64 (PEM)
  or 70 (OpenSSH) characters of mixed base64 is taken for key material, and so are the
  shorter base64 lines that directly follow it with the same prefix (a block's last
  line); inside a block that is *not* a private key (a certificate), nothing goes.

Each redacted body is replaced by ``[REDACTED:private-key]`` and the prefix stays, so
line numbers still tell the model where things are.

A reader that shows a window of a file knows more than its window: :class:`OpenBlock`
follows the lines above it, and when the window starts inside a private-key block the
reader puts that block's BEGIN line in a note above the window, so every line of the
window is read as inside the block, whatever its width (a key wrapped at 76 columns, or
the short last line shown alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

LABEL = "[REDACTED:private-key]"

_MARKER = re.compile(r"-----(BEGIN|END) ([A-Z0-9 ]{1,40}?)-----")
_LONGEST_MARKER = len("-----BEGIN -----") + 40
# Where one line ends: a real break, or an escaped one when the text is a JSON line.
_BREAK = re.compile(r"(\r?\n|\\r\\n|\\n)")
# The base64 a line ends with (standard alphabet, as PEM and OpenSSH use).
_TAIL = re.compile(r"[A-Za-z0-9+/]+=*$")
# Long enough that, inside a key block, it can only be key material.
_LONG_RUN = re.compile(r"[A-Za-z0-9+/]{32,}=*")
# Inside a key block, on a line whose end is not clean base64 (`cat -A`'s `$`, a quote).
_BLOCK_RUN = re.compile(r"[A-Za-z0-9+/]{16,}=*")
# Encrypted PEM headers: visible, not secret.
_HEADER = re.compile(r"(?:Proc-Type|DEK-Info|Comment):")
_KEY_WIDTHS = (64, 70)
# Characters that may end a prefix in front of a line's body: cat -n's tab, grep's
# `:` and `-`, spaces; a lone `\` is the rest of a JSON-escaped tab.
_PREFIX_ENDS = " \t:-\\"


class Context(Enum):
    UNKNOWN = "unknown"  # no marker says what this line belongs to
    PRIVATE = "private"  # inside a private-key block
    OTHER = "other"  # inside another PEM block (a certificate, a public key)


@dataclass(frozen=True)
class _Line:
    text: str
    # The last marker on the line: ("BEGIN" | "END", is a private key), or None.
    marker: tuple[str, bool] | None
    opens: bool  # ends inside a block (a BEGIN not closed on the same line)


def _parse(text: str) -> _Line:
    markers = [(m.group(1), "PRIVATE KEY" in m.group(2)) for m in _MARKER.finditer(text)]
    if not markers:
        return _Line(text, None, False)
    return _Line(text, markers[-1], markers[-1][0] == "BEGIN")


def _body(line: str) -> tuple[str, str] | None:
    """(prefix, body) when the line ends in base64 that the prefix could stand before."""
    m = _TAIL.search(line)
    if m is None:
        return None
    start = m.start()
    # A JSON-escaped tab (`\t`) leaves a `t` glued to the body.
    if start > 0 and line[start - 1] == "\\" and line[start] == "t":
        start += 1
    prefix, body = line[:start], line[start:]
    if not body or (prefix and prefix[-1] not in _PREFIX_ENDS):
        return None
    return prefix, body


def _normal_prefix(prefix: str) -> str:
    """A prefix with its numbers and match/context marks evened out (`p:9:` == `p-10-`)."""
    return re.sub(r"\d+", "0", prefix.strip()).replace(":", "-")


def _is_key_width(body: str) -> bool:
    """A full line of key base64: the right width, and mixed like random base64 is."""
    core = body.rstrip("=")
    if len(body) not in _KEY_WIDTHS and not (len(body) - 1 in _KEY_WIDTHS and body[0] == "+"):
        return False  # (a leading `+` may be a diff's mark)
    if re.fullmatch(r"[0-9a-fA-F]+", core):
        return False  # a hex digest, not base64
    return (any(c.isupper() for c in core) and any(c.islower() for c in core)
            and any(c.isdigit() for c in core))


def _redact_in_block(line: str) -> str:
    """Everything that can be key material on a line inside a private-key block."""
    if _HEADER.search(line):
        return line  # Proc-Type / DEK-Info of an encrypted key: not secret
    split = _body(line)
    if split is not None and len(split[1].rstrip("=")) >= 2:
        prefix, _ = split
        return _LONG_RUN.sub(LABEL, prefix) + LABEL
    # No clean body at the end (`cat -A`'s `$`, a quoted string): any long run goes.
    return _BLOCK_RUN.sub(LABEL, line)


class LineState:
    """What the lines seen so far say about the next one (for output arriving a line at a time)."""

    def __init__(self) -> None:
        self.context = Context.UNKNOWN
        # The prefix of the previous line taken for key material outside any marker,
        # so a short last line right after it goes too.
        self._run_prefix: str | None = None

    def feed(self, text: str) -> str:
        line = _parse(text)
        redacted = self.redact(line.text, self.context)
        self.advance(line)
        return redacted

    def redact(self, text: str, context: Context) -> str:
        if context is Context.PRIVATE:
            self._run_prefix = None
            return _redact_in_block(text)
        if context is Context.OTHER or _MARKER.search(text):
            self._run_prefix = None
            return text
        split = _body(text)
        if split is None:
            self._run_prefix = None
            return text
        prefix, body = split
        if _is_key_width(body):
            self._run_prefix = _normal_prefix(prefix)
            return prefix + LABEL
        if (self._run_prefix is not None and _normal_prefix(prefix) == self._run_prefix
                and len(body.rstrip("=")) >= 2 and len(body) <= max(_KEY_WIDTHS)):
            return prefix + LABEL  # the short last line of the block
        self._run_prefix = None
        return text

    def advance(self, line: _Line) -> None:
        if line.marker is None:
            return
        kind, private = line.marker
        if kind == "BEGIN":
            self.context = Context.PRIVATE if private else Context.OTHER
        else:
            self.context = Context.UNKNOWN
        self._run_prefix = None


class OpenBlock:
    """Text read from its start in pieces (cut anywhere): the BEGIN line of the private-key
    block it leaves open, if any (``marker``)."""

    def __init__(self) -> None:
        self.marker: str | None = None
        self._tail = ""  # the end of the last piece: a marker may be cut in two

    def feed(self, text: str) -> None:
        scan = self._tail + text
        # (a marker seen again in the tail is still the last one)
        last = next(iter(reversed(list(_MARKER.finditer(scan)))), None)
        if last is not None:
            private = last.group(1) == "BEGIN" and "PRIVATE KEY" in last.group(2)
            self.marker = last.group(0) if private else None
        self._tail = scan[-_LONGEST_MARKER:]


def _split(text: str) -> Iterator[str]:
    """Lines and the breaks between them, alternately (a break may be `\\n` escaped)."""
    return iter(_BREAK.split(text))


def redact_key_lines(text: str) -> str:
    """``text`` with the key material of partial or prefixed private-key blocks replaced."""
    if "-----" not in text and not _LONG_RUN.search(text):
        return text  # no marker and no base64 line long enough to be key material
    pieces = list(_split(text))
    lines = [_parse(p) for p in pieces[0::2]]
    contexts = _contexts(lines)
    state = LineState()
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(state.redact(line.text, contexts[i]))
        state.advance(line)
        if 2 * i + 1 < len(pieces):
            out.append(pieces[2 * i + 1])
    return "".join(out)


def _contexts(lines: list[_Line]) -> list[Context]:
    """Each line's block: forward from every BEGIN, and backward from an END that has none."""
    contexts = [Context.UNKNOWN] * len(lines)
    current = Context.UNKNOWN
    last_marker = -1
    for i, line in enumerate(lines):
        if line.marker is None:
            contexts[i] = current
            continue
        kind, private = line.marker
        if kind == "END" and current is Context.UNKNOWN:
            # An END whose BEGIN is not shown: the lines above it, back to the
            # previous marker, were inside its block.
            for j in range(last_marker + 1, i):
                contexts[j] = Context.PRIVATE if private else Context.OTHER
        current = (Context.PRIVATE if private else Context.OTHER) if line.opens else Context.UNKNOWN
        last_marker = i
    return contexts
