"""Where a text the model looked for most nearly is, for a "not found" message."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .text import normalize_newlines, numbered


@dataclass(frozen=True)
class NearMatch:
    line: int  # 1-based first line of the match
    lines: tuple[str, ...]
    whitespace_only: bool

    def render(self) -> str:
        return numbered(list(self.lines), self.line)


_MAX_CANDIDATES = 2000
_FULL_SCAN_LINES = 5000
_WORD = re.compile(r"\w{3,}")


def find_near_match(text: str, needle: str, cutoff: float = 0.6) -> NearMatch | None:
    """The place in ``text`` that looks most like ``needle``, for a "not found" message.

    First a match that differs only in whitespace; otherwise the line window most
    similar by difflib's ratio. On big files only windows anchored on a line the two
    share, or on the needle's rarest words, are scored; every search over the whole
    text is a regex or str method, so a 200,000-line file stays cheap.
    """
    body = normalize_newlines(text)
    squeezed = "".join(needle.split())
    if not squeezed:
        return None
    hay = body.split("\n")
    loose = re.compile(r"\s*".join(map(re.escape, squeezed)))
    hit = loose.search(body)
    if hit is not None:
        first = body.count("\n", 0, hit.start())
        last = first + body.count("\n", hit.start(), hit.end())
        return NearMatch(first + 1, tuple(hay[first:last + 1]), True)

    wanted = normalize_newlines(needle).strip("\n").split("\n")
    size = len(wanted)
    starts: set[int] = set()
    for offset, line in enumerate(wanted):
        core = line.strip()
        if len(core) >= 4:
            same_line = re.compile(r"^[ \t]*" + re.escape(core) + r"[ \t]*$", re.MULTILINE)
            starts.update(index - offset for index in _lines_of(body, same_line))
    if not starts:
        if len(hay) <= _FULL_SCAN_LINES:
            starts = set(range(len(hay)))
        else:
            starts = _rare_word_starts(body, wanted)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(wanted))
    best_score, best_start = cutoff, -1
    highest = max(len(hay) - size, 0)
    for start in sorted({min(max(s, 0), highest) for s in starts}):
        matcher.set_seq1("\n".join(hay[start:start + size]))
        if matcher.real_quick_ratio() <= best_score or matcher.quick_ratio() <= best_score:
            continue
        score = matcher.ratio()
        if score > best_score:
            best_score, best_start = score, start
    if best_start < 0:
        return None
    return NearMatch(best_start + 1, tuple(hay[best_start:best_start + size]), False)


def _lines_of(body: str, pattern: re.Pattern[str]) -> list[int]:
    """0-based numbers of the lines where ``pattern`` matches (at most _MAX_CANDIDATES)."""
    numbers: list[int] = []
    line, previous = 0, 0
    for match in pattern.finditer(body):
        line += body.count("\n", previous, match.start())
        previous = match.start()
        numbers.append(line)
        if len(numbers) >= _MAX_CANDIDATES:
            break
    return numbers


def _rare_word_starts(body: str, wanted: list[str]) -> set[int]:
    """Window starts around lines holding the needle's three rarest words."""
    counts = sorted((body.count(word), word) for word in set(_WORD.findall("\n".join(wanted))))
    starts: set[int] = set()
    for _count, word in [(c, w) for c, w in counts if c > 0][:3]:
        offsets = [j for j, line in enumerate(wanted) if word in line]
        for index in _lines_of(body, re.compile(re.escape(word))):
            starts.update(index - offset for offset in offsets)
    return starts
