"""Removing secrets from tool output before the model or a session file sees them.

One precompiled alternation finds credentials with well-known shapes (provider key
prefixes, private-key blocks, Slack webhooks, JWTs, bearer tokens) and values assigned
to obviously secret names (``password = "..."``, ``API_KEY=...``). Each is replaced by
``[REDACTED:<kind>]``; for assignments only the value goes, so the output still shows
which setting was there. The patterns demand enough length and, for the generic ones,
a digit, so ordinary identifiers and code survive untouched.

Key blocks shown with line numbers, grep prefixes or only in part are found line by
line (``key_blocks``). A ``Redactor`` also knows the exact secret values this Loom holds
(its API keys) and removes them wherever they appear, in any letter case.

This is a safety net, not a boundary: a command that transforms a secret (``rev``,
``base64``, ``cut``, ``xxd``, splitting it across lines) gets it past every pattern.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from .key_blocks import LineState, redact_key_lines

# Every alternative of the regex starts with one literal character, which lets the
# engine skip quickly to positions where a secret could start and reject the other
# alternatives with one comparison each. Conditions on the character *before* a match
# would break that, so ``_replace`` checks them instead.
_B64 = r"[A-Za-z0-9+/=]"
_PEM_END = r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
# Line breaks inside a key: real ones, or `\n` escapes when the key sits in JSON.
_NL = r"(?:\r?\n|\\r\\n|\\n)"

# (kind, first characters, what may not come just before it, rest of the pattern): a
# "word" secret cannot continue a longer word, an "upper" one a run of capitals. A group
# in the rest holds the part to replace when only a value is secret.
_PREFIXED: tuple[tuple[str, str, str, str], ...] = (
    # A whole block, or (output cut short) the marker and the base64 lines after it. A
    # marker quoted in documentation, with no key material after it, is left alone.
    ("private-key", "-", "",
     r"----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:[ \t]*" + _NL + r")+"
     r"(?:[ \t]*(?:Proc-Type|DEK-Info|Comment):[^\n\\]*(?:[ \t]*" + _NL + r")+)*[ \t]*"
     + _B64 + r"{16,}"
     r"(?:(?:[ \t]|" + _NL + r"|" + _B64 + r")*?" + _PEM_END
     + r"|(?:[ \t]*" + _NL + r"[ \t]*" + _B64 + r"{16,})*=*)"),
    ("anthropic-key", "s", "", r"k-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", "s", "", r"k-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", "s", "word", r"k-(?=[A-Za-z0-9_\-]{0,200}\d)[A-Za-z0-9][A-Za-z0-9_\-]{31,}"),
    ("stripe-key", "sr", "word", r"k_(?:live|test)_[A-Za-z0-9]{20,}"),
    ("github-token", "g", "", r"h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab-token", "g", "", r"lpat-[A-Za-z0-9_\-]{20,}"),
    ("aws-access-key", "A", "upper", r"(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ("google-api-key", "A", "", r"Iza[0-9A-Za-z_\-]{35,}"),
    ("slack-webhook", "h", "",
     r"ttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}"),
    ("slack-token", "x", "", r"ox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("jwt", "e", "word", r"yJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("bearer-token", "bB", "word", r"(?i:earer)[ \t]+([A-Za-z0-9._~+/\-]{20,}=*)"),
)

# Names that announce a secret, by first letter (matched case-insensitively);
# `DB_PASSWORD` is found at `PASSWORD`, and the name must end there.
_SECRET_NAMES: dict[str, str] = {
    "p": r"ass(?:word|wd|phrase)?|wd|rivate[_\-]?(?:key|token)",
    "s": r"ecret(?:[_\-]?(?:access[_\-]?)?key)?|ession[_\-]?token",
    "a": r"pi[_\-]?(?:key|token)|ccess[_\-]?(?:key|token)|uth[_\-]?token",
    "t": r"oken",
    "c": r"lient[_\-]?secret|redentials?",
    "r": r"efresh[_\-]?token",
}
# `password = "hunter22"` or `"api_key": "..."`: a quoted literal of 8+ characters with
# a digit in it (which spares names and messages such as 'Password:'), its quotes
# possibly escaped as in a JSON transcript line; or, in env files
# and configs, `API_KEY=abc123...`: unquoted, 12+ characters with a digit, and not
# followed by code-like characters.
_ASSIGNED_VALUE = (
    r"(?![A-Za-z0-9_])(?:\\?[\"']?[ \t]*(?:=|:|:=|=>)[ \t]*"
    r"(?:\\?\"((?=[^\"\s]{0,200}\d)[^\"'\s\\]{8,})\\?\"|\\?'((?=[^'\s]{0,200}\d)[^\"'\s\\]{8,})\\?')"
    r"|[ \t]*[=:][ \t]*((?=[A-Za-z0-9+/=_\-]{0,200}\d)[A-Za-z0-9+/=_\-]{12,}+)(?![.(\[{\w]))"
)


def _build() -> tuple[re.Pattern[str], dict[int, tuple[str, str, tuple[int, ...]]]]:
    branches: list[tuple[str, str, str, str]] = []
    for kind, firsts, boundary, rest in _PREFIXED:
        branches.extend((kind, first, boundary, rest) for first in firsts)
    for letter, names in _SECRET_NAMES.items():
        for first in (letter, letter.upper()):
            branches.append(("secret", first, "name", f"(?i:{names})" + _ASSIGNED_VALUE))
    parts: list[str] = []
    groups: dict[int, tuple[str, str, tuple[int, ...]]] = {}
    index = 1
    for kind, first, boundary, rest in branches:
        inner = re.compile(rest).groups
        groups[index] = (kind, boundary, tuple(range(index + 1, index + 1 + inner)))
        parts.append(re.escape(first) + "(" + rest + ")")
        index += 1 + inner
    return re.compile("|".join(parts)), groups


_SECRETS, _BRANCHES = _build()


def _glued_to_word(boundary: str, before: str, first: str) -> bool:
    """Whether a match merely continues a longer word (and so is no secret)."""
    if boundary == "name":
        # `DB_PASSWORD` and `dbPassword` name a password; `bypass` does not.
        return before.isalnum() and not (first.isupper() and (before.islower() or before.isdigit()))
    if boundary == "upper":
        return before.isupper() or before.isdigit()
    if boundary == "word":
        return before.isalnum() or before in "_-"
    return False


def _replace(m: re.Match[str]) -> str:
    kind, boundary, value_groups = _BRANCHES[m.lastindex or 0]
    text = m.group(0)
    start = m.start()
    if boundary and start > 0 and _glued_to_word(boundary, m.string[start - 1], text[0]):
        # No secret starts here, but one may start further inside the match.
        return text[0] + _redact_shapes(text[1:])
    label = f"[REDACTED:{kind}]"
    value = next((g for g in value_groups if m.start(g) >= 0), None)
    if value is None:
        return label
    value_start, value_end = m.span(value)
    inner = _redact_shapes(m.group(value))
    if inner != m.group(value):
        label = inner  # a key with a known shape: name its kind
    return text[: value_start - start] + label + text[value_end - start:]


def _redact_shapes(text: str) -> str:
    return _SECRETS.sub(_replace, text)


# Shorter values would be found inside ordinary words; keys are far longer.
MIN_KNOWN_SECRET_CHARS = 8
KNOWN_SECRET_LABEL = "[REDACTED:api-key]"

_Tree = TypeVar("_Tree")


@dataclass(frozen=True)
class Redactor:
    """Removes secrets: the exact values it was built with, and every known shape.

    Built once per process from the keys Loom holds and handed to each place that lets
    text out (tool results, progress lines, events printed by `loom run`).
    """

    # repr=False: a Redactor in a log line or a traceback must not print the keys.
    known_secrets: tuple[str, ...] = field(default=(), repr=False)
    _known: re.Pattern[str] | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        forms: dict[str, None] = {}
        for value in self.known_secrets:
            if len(value) < MIN_KNOWN_SECRET_CHARS:
                raise ValueError(f"a known secret must have at least {MIN_KNOWN_SECRET_CHARS} characters")
            # As typed, inside a URL, and inside a JSON string.
            for form in (value, urllib.parse.quote(value, safe=""), json.dumps(value)[1:-1]):
                forms[form] = None
        if forms:
            alternatives = sorted(forms, key=len, reverse=True)  # the longest form wins
            pattern = re.compile("|".join(map(re.escape, alternatives)), re.IGNORECASE)
            object.__setattr__(self, "_known", pattern)

    @classmethod
    def for_values(cls, values: Iterable[str | None]) -> Redactor:
        """A Redactor for the given values, skipping unset and too-short ones."""
        kept = (v.strip() for v in values if v)
        return cls(tuple(dict.fromkeys(v for v in kept if len(v) >= MIN_KNOWN_SECRET_CHARS)))

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
        if not text:
            return text
        if self._known is not None:
            text = self._known.sub(KNOWN_SECRET_LABEL, text)
        return redact_key_lines(_redact_shapes(text))

    def redact_tree(self, value: _Tree) -> _Tree:
        """Every string inside nested dicts, lists and tuples redacted (an event's fields)."""
        return self._tree(value)  # type: ignore[return-value]  # same shape, strings redacted

    def _tree(self, value: object) -> object:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {k: self._tree(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            items = [self._tree(v) for v in value]
            return items if isinstance(value, list) else tuple(items)
        return value

    def lines(self) -> Callable[[str], str]:
        """A redactor for one stream of lines (a command's progress), remembering key blocks."""
        state = LineState()

        def redact_line(line: str) -> str:
            if self._known is not None:
                line = self._known.sub(KNOWN_SECRET_LABEL, line)
            return state.feed(_redact_shapes(line))

        return redact_line


_SHAPES_ONLY = Redactor()


def redact_secrets(text: str) -> str:
    """``text`` with every secret of a recognised shape replaced by ``[REDACTED:<kind>]``."""
    return _SHAPES_ONLY.redact(text)
