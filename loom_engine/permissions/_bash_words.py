"""Shell words rebuilt character by character: quote removal and the flags the
permission checks need (glob, brace expansion, a pattern that may match ``..``).

The parse tree says where a word and its quoted parts begin and end; the characters
in between are read here by bash's own rules, so that a quirk of the grammar can never
change a word's text. Anything the rules below do not expect (an unescaped ``$(`` the
tree did not report, say) raises :class:`ShellDoubt`.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from .shell_words import ShellDoubt, Word

_NAME_START = re.compile(r"[A-Za-z_]")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
# An unquoted character that ends a word in bash: a word that holds one was misread.
_WORD_ENDERS = frozenset(" \t\n;&|<>()'\"`")
# Bare text holding none of these (no escape, no '$', no word ender) is taken as it
# stands, in one step: most words of a command line are such text.
_PLAIN_TEXT = re.compile("[^" + re.escape("".join(sorted(_WORD_ENDERS | {"\\", "$"}))) + "]*")
SIMPLE_EXPANSION = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[@*#?$!\-0-9])")
# ${NAME}, ${#NAME} and ${NAME<op>word} with a plain word. Anything else may evaluate
# arithmetic (offsets, array subscripts, ${!ref} of 'a[$(cmd)]') or run a substitution.
_PARAM = r"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])"
SAFE_BRACED_EXPANSION = re.compile(
    r"\$\{(?:#?" + _PARAM + r"|" + _PARAM +
    r"(?::?[-+=?]|%%?|##?|//?|\^\^?|,,?)[^$`'\"\\{}\[\]()<>!]*)\}")


@dataclass
class WordBuf:
    """The characters of one word, each marked quoted or not."""

    chars: list[str] = field(default_factory=list)
    quoted_mask: list[bool] = field(default_factory=list)
    literal: bool = True
    quoted: bool = False
    procsub: bool = False

    def add(self, ch: str, quoted: bool) -> None:
        self.chars.append(ch)
        self.quoted_mask.append(quoted)
        if quoted:
            self.quoted = True

    def add_expansion(self, raw: str) -> None:
        # Expansion text counts as quoted so that its characters never look like globs;
        # ``literal`` records that the value is unknown.
        self.chars.extend(raw)
        self.quoted_mask.extend([True] * len(raw))
        self.literal = False

    def add_plain(self, text: str) -> None:
        """Unquoted characters, none of them special (see :func:`add_unquoted`)."""
        self.chars.extend(text)
        self.quoted_mask.extend([False] * len(text))

    def build(self, raw: str) -> Word:
        text = "".join(self.chars)
        if True not in self.quoted_mask:
            # (``quoted`` may still be set: an empty '' or "" quotes no character)
            return _unquoted_word(text, raw, literal=self.literal, quoted=self.quoted,
                                  procsub=self.procsub)
        unquoted = "".join(ch for ch, q in zip(self.chars, self.quoted_mask, strict=True) if not q)
        glob = "*" in unquoted or "?" in unquoted or "[" in unquoted
        return Word(text=text, raw=raw, literal=self.literal, glob=glob,
                    brace="{" in unquoted and _has_brace_expansion(self.chars, self.quoted_mask),
                    quoted=self.quoted, procsub=self.procsub,
                    glob_parent_dots=glob and _glob_may_match_parent(self.chars, self.quoted_mask),
                    tilde=bool(self.chars) and self.chars[0] == "~" and not self.quoted_mask[0])


def bare_word(raw: str) -> Word | None:
    """The word bare text makes when it holds nothing to unquote or expand (the same
    word :class:`WordBuf` builds from it, without going character by character), or
    None when it does hold something."""
    if not _PLAIN_TEXT.fullmatch(raw):
        return None
    return _unquoted_word(raw, raw, literal=True, quoted=False, procsub=False)


def _unquoted_word(text: str, raw: str, *, literal: bool, quoted: bool, procsub: bool) -> Word:
    """:meth:`WordBuf.build` for a word none of whose characters is quoted."""
    glob = "*" in text or "?" in text or "[" in text
    unquoted = [False] * len(text) if glob or "{" in text else []
    return Word(text=text, raw=raw, literal=literal, glob=glob,
                brace="{" in text and _has_brace_expansion(list(text), unquoted),
                quoted=quoted, procsub=procsub,
                glob_parent_dots=glob and _glob_may_match_parent(list(text), unquoted),
                tilde=text.startswith("~"))


def add_unquoted(buf: WordBuf, raw: str, following: str) -> None:
    """Bare word text: a backslash quotes the next character, backslash-newline vanishes.

    ``following`` is the source text right after ``raw`` (to tell a lone ``$`` from the
    start of an expansion the tree did not report)."""
    if _PLAIN_TEXT.fullmatch(raw):
        buf.add_plain(raw)
        return
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n:
                if raw[i + 1] != "\n":
                    buf.add(raw[i + 1], True)
                i += 2
            else:
                buf.add("\\", True)
                i += 1
            continue
        if c in _WORD_ENDERS:
            raise ShellDoubt(f"a word this check reads differently from bash ({raw!r})")
        if c == "$":
            nxt = raw[i + 1] if i + 1 < n else following[:1]
            if _starts_expansion(nxt, in_double_quotes=False):
                raise ShellDoubt(f"an expansion this check cannot follow ({raw!r})")
        buf.add(c, False)
        i += 1


def add_double_quoted(buf: WordBuf, raw: str, following: str, heredoc: bool = False) -> None:
    """Text between double quotes (or in an expanding here-document) that holds no
    expansion: only ``\\$ \\` \\\\`` (and ``\\"`` in quotes) and backslash-newline are
    escapes. An unescaped backquote or ``$(`` here means the tree missed a substitution."""
    escapable = "$`\\\n" if heredoc else '$`"\\\n'
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n and raw[i + 1] in escapable:
            if raw[i + 1] != "\n":
                buf.add(raw[i + 1], True)
            i += 2
            continue
        if c == "`":
            where = "a here-document" if heredoc else "double quotes"
            raise ShellDoubt(f"a backquote substitution inside {where} this check cannot follow")
        if c == '"' and not heredoc:
            raise ShellDoubt("a double-quoted word this check reads differently from bash")
        if c == "$":
            nxt = raw[i + 1] if i + 1 < n else following[:1]
            if _starts_expansion(nxt, in_double_quotes=True):
                raise ShellDoubt("an expansion this check cannot follow")
        buf.add(c, True)
        i += 1


def _starts_expansion(nxt: str, in_double_quotes: bool) -> bool:
    if not nxt:
        return False
    if nxt in "({[" or nxt in _SPECIAL_PARAMS or _NAME_START.match(nxt):
        return True
    return not in_double_quotes and nxt in "'\""


def _has_brace_expansion(chars: list[str], mask: list[bool]) -> bool:
    depth_open = -1
    for idx, (ch, quoted) in enumerate(zip(chars, mask, strict=True)):
        if quoted:
            continue
        if ch == "{":
            depth_open = idx
        elif ch == "}" and depth_open >= 0:
            inner = list(zip(chars[depth_open + 1: idx], mask[depth_open + 1: idx], strict=True))
            if any(c == "," and not q for c, q in inner):
                return True
            if ".." in "".join(c for c, _ in inner):
                return True
    return False


def _glob_may_match_parent(chars: list[str], mask: list[bool]) -> bool:
    """True when a path component like ``.*`` or ``.?`` could expand to ``..``."""
    component: list[tuple[str, bool]] = []
    for ch, quoted in [*zip(chars, mask, strict=True), ("/", True)]:
        if ch == "/":
            if component and component[0][0] == ".":
                has_glob = any(c in "*?[" and not q for c, q in component)
                pattern = "".join(("[" + c + "]" if q and c in "*?[" else c) for c, q in component)
                if has_glob and fnmatch.fnmatchcase("..", pattern):
                    return True
            component = []
        else:
            component.append((ch, quoted))
    return False
