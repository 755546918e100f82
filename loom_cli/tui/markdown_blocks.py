"""Streamed markdown cut into top-level blocks: `BlockSplitter` closes a block as soon
as it is certain to be finished, so the widget renders each finished block once."""

from __future__ import annotations

import re
from dataclasses import dataclass

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



def fence_code(block_text: str) -> list[str]:
    """The code lines of a top-level fence block (opener and, if present, closer removed)."""
    lines = block_text.split("\n")[1:]
    if lines:
        last = lines[-1].strip()
        if len(last) >= 3 and last == last[0] * len(last) and last[0] in "`~":
            lines = lines[:-1]
    return lines
