"""Two leniencies of the edit tools, for what models commonly send.

- Quotes: models type straight quotes (' ") where a file has typographic ones
  (U+2018 U+2019 U+201C U+201D). When old_string is not found exactly, it is looked for again with every
  quote folded to its straight form; the replacement then keeps the file's quote
  characters (``with_file_quotes``).
- Deleting lines: an empty new_string whose match covers whole lines removes their line
  break too, so no blank line is left behind (``whole_line_span``).

Both work on the text the edit matches against (line breaks already folded to ``\\n``
when the model sent ``\\n`` for a ``\\r\\n`` file); positions map back unchanged
because folding quotes replaces one character with one character.
"""

from __future__ import annotations

_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_QUOTES = frozenset("'\"\u2018\u2019\u201c\u201d")
# (straight, opening, closing) for each kind of quote.
_KINDS = (("'", "\u2018", "\u2019"), ('"', "\u201c", "\u201d"))
# A quote right after one of these (or at the start of a line) opens; anywhere else it
# closes, which also makes the apostrophe of "don't" a closing single quote.
_BEFORE_OPENING = frozenset(" \t\n\r([{<\u2014\u2013\u2018\u201c")


def fold_quotes(text: str) -> str:
    """``text`` with curly quotes replaced by ' and " (same length, same positions)."""
    return text.translate(_FOLD)


def has_quotes(text: str) -> bool:
    return not _QUOTES.isdisjoint(text)


def with_file_quotes(new: str, found: str, before: str) -> str:
    """``new`` for a match ``found`` in the file that differs from old_string only in quotes.

    The rule, meant to be predictable:
    1. Where ``new`` begins or ends with the same text as the match (quotes aside), the
       file's own characters are kept there, whatever quotes the model typed.
    2. In the part between, each straight quote becomes a curly one when the match
       wrote that kind of quote (single or double) curly anywhere: opening (U+2018,
       U+201C) at the start of a line or after a space or an opening bracket or quote,
       closing (U+2019, U+201D) otherwise. A kind the match did not write curly stays as the model typed it.
    ``before`` is the file's character just before the match ("" at the file's start).
    """
    plain_new, plain_found = fold_quotes(new), fold_quotes(found)
    limit = min(len(new), len(found))
    head = 0
    while head < limit and plain_new[head] == plain_found[head]:
        head += 1
    tail = 0
    while tail < limit - head and plain_new[len(new) - 1 - tail] == plain_found[len(found) - 1 - tail]:
        tail += 1
    middle = new[head:len(new) - tail]
    curly = [kind for kind in _KINDS if kind[1] in found or kind[2] in found]
    if curly and middle:
        middle = _curl(middle, curly, (before + found[:head])[-1:])
    return found[:head] + middle + found[len(found) - tail:]


def _curl(text: str, kinds: list[tuple[str, str, str]], before: str) -> str:
    straight = {kind[0]: kind for kind in kinds}
    out: list[str] = []
    previous = before
    for char in text:
        kind = straight.get(char)
        if kind is not None:
            char = kind[1] if previous == "" or previous in _BEFORE_OPENING else kind[2]
        out.append(char)
        previous = char
    return "".join(out)


def whole_line_span(work: str, start: int, end: int, lower: int, upper: int) -> tuple[int, int]:
    """The span ``[start, end)`` of a deletion, widened by one line break when it covers whole lines.

    Whole lines: the match starts at a line's start and ends at a line's end without
    taking the line break. Then the break after it goes too; when the match runs to the
    end of a file whose last line has no break, the break before it goes instead, so
    the file keeps having no final line break. ``lower`` and ``upper`` bound the span
    (the neighbouring matches of a replace_all), so spans never overlap.
    """
    if start == end or (start > 0 and work[start - 1] != "\n") or work[end - 1] == "\n":
        return start, end
    for brk in ("\r\n", "\n"):
        if work.startswith(brk, end):
            return (start, end + len(brk)) if end + len(brk) <= upper else (start, end)
    if end != len(work) or start == 0:
        return start, end  # the match ends inside a line, or it is the whole file
    back = 2 if work[start - 2:start] == "\r\n" else 1
    return (start - back, end) if start - back >= lower else (start, end)
