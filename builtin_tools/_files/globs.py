"""Glob patterns with ripgrep's meaning, turned into regular expressions."""

from __future__ import annotations

import re
from dataclasses import dataclass


def glob_to_regex(glob: str, *, braces: bool = True) -> str:
    """A regex (for ``fullmatch``) equivalent to a glob in ripgrep's globset syntax.

    ``*`` and ``?`` never match ``/``; ``**`` as a whole path component matches any
    number of folders; ``[...]`` / ``[!...]`` classes; ``{a,b}`` alternatives when
    ``braces``; a backslash makes the next character literal.
    """
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            if glob.startswith("**", i):
                starts_component = i == 0 or glob[i - 1] == "/"
                ends_component = i + 2 == n or glob[i + 2] == "/"
                if starts_component and ends_component:
                    if i + 2 == n:
                        out.append(".*")
                        i += 2
                    else:
                        out.append("(?:.*/)?")
                        i += 3
                    continue
                i += 2  # `a**b` is just a wildcard inside one component
            else:
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            cls, i = _char_class(glob, i)
            out.append(cls)
        elif ch == "{" and braces:
            close = _matching_brace(glob, i)
            if close < 0:
                out.append(re.escape(ch))
                i += 1
                continue
            alternatives = _split_top_level(glob[i + 1:close])
            out.append("(?:" + "|".join(glob_to_regex(a, braces=True) for a in alternatives) + ")")
            i = close + 1
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def _char_class(glob: str, start: int) -> tuple[str, int]:
    j = start + 1
    negate = j < len(glob) and glob[j] in "!^"
    if negate:
        j += 1
    body_start = j
    if j < len(glob) and glob[j] == "]":
        j += 1  # a `]` right after the opening is a member, not the end
    while j < len(glob) and glob[j] != "]":
        j += 1
    if j >= len(glob):
        return re.escape("["), start + 1  # unclosed: a literal bracket
    members = []
    for c in glob[body_start:j]:
        members.append("-" if c == "-" else re.escape(c))
    body = "".join(members)
    # A class never matches the path separator, as in git and globset.
    cls = f"[^/{body}]" if negate else f"(?:(?!/)[{body}])"
    return cls, j + 1


def _matching_brace(glob: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(glob):
        c = glob[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_top_level(body: str) -> list[str]:
    parts, depth, current, i = [], 0, [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            current.append(body[i:i + 2])
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts


@dataclass(frozen=True)
class PathGlob:
    """A file filter with ripgrep's meaning: no ``/`` → matches the file name at any
    depth; with ``/`` → matches the path relative to the search folder. A leading
    ``!`` excludes instead."""

    pattern: str
    text: str  # the pattern without `!`, `./` or a leading `/`
    regex: re.Pattern[str]
    basename_only: bool
    negated: bool

    @classmethod
    def compile(cls, pattern: str) -> PathGlob:
        text = pattern.strip()
        negated = text.startswith("!")
        if negated:
            text = text[1:]
        while text.startswith("./"):
            text = text[2:]
        basename_only = "/" not in text
        text = text.lstrip("/")
        if not text:
            raise ValueError(f"empty glob pattern {pattern!r}")
        return cls(pattern, text, re.compile(glob_to_regex(text), re.DOTALL), basename_only, negated)

    def matches(self, rel: str) -> bool:
        subject = rel.rsplit("/", 1)[-1] if self.basename_only else rel
        return (self.regex.fullmatch(subject) is not None) != self.negated

    def rg_prefilter(self) -> str | None:
        """The file-name part of the pattern, to narrow what rg reads, or None.

        :meth:`matches` still decides, so it must never be stricter than the full
        pattern. See :func:`rg_filter_args` for how rg is given it.
        """
        if self.negated:
            return None
        last = _last_component(self.text)
        if not last or "**" in last:
            return None
        return last


def _last_component(glob: str) -> str | None:
    depth = 0
    cut = -1
    for i, c in enumerate(glob):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "/":
            if depth:
                return None  # `{a,b/c}`: the file name is not one glob
            cut = i
    return glob[cut + 1:]
