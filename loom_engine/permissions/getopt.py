"""Reading a command's arguments the way its own option parser will.

A read-only check that matches option names as written can be walked around: GNU
``getopt_long`` takes any unambiguous prefix of a long option (``grep --deref`` is
``grep --dereference-recursive``), permutes options found after operands, reads a
short option's value glued to it (``-fnames``) or from the next word, and bundles short
options (``-rN``). This module holds the one rule by which Loom resolves an option
word, and parses a whole argument list into the options given (with their values) and
the operands, so that the permission check decides on what the program will do.

An option this table does not know, an ambiguous abbreviation, or a value where the
program takes none is a *doubt*: the command is then not read-only, and it asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Arity = Literal["none", "required", "optional"]

_ARITY_MARK: dict[str, Arity] = {"=": "required", "?": "optional"}


@dataclass(frozen=True)
class LongOption:
    """A long option: ``--name``; ``key`` names what it does (aliases share one)."""

    name: str
    key: str
    arity: Arity


@dataclass(frozen=True)
class OptionTable:
    """Every option a program's parser accepts.

    ``abbreviations``: the parser takes an unambiguous prefix of a long option (GNU
    getopt_long). ``equals_strips``: a short option's glued value drops a leading '='
    (``rg -e=x`` searches for ``x``; GNU's ``grep -e=x`` searches for ``=x``).
    """

    short: dict[str, Arity]
    long: tuple[LongOption, ...]
    abbreviations: bool = True
    equals_strips: bool = False

    @classmethod
    def of(cls, short: str, long: str, *, abbreviations: bool = True,
           equals_strips: bool = False) -> OptionTable:
        """A table from getopt's own notation: ``short`` as getopt's option string
        (``"c:n:qv"``: ``c`` and ``n`` take a value, ``::`` an optional one) and ``long``
        as words ``name``, ``name=`` (takes a value), ``name?`` (an optional one), each
        optionally ``>other`` when it is an alias of ``--other``."""
        shorts: dict[str, Arity] = {}
        k = 0
        while k < len(short):
            letter = short[k]
            colons = len(short[k + 1:]) - len(short[k + 1:].lstrip(":"))
            shorts[letter] = "none" if colons == 0 else "required" if colons == 1 else "optional"
            k += 1 + colons
        longs: list[LongOption] = []
        for token in long.split():
            spec, _, alias = token.partition(">")
            arity = _ARITY_MARK.get(spec[-1:], "none")
            name = spec[:-1] if spec[-1:] in _ARITY_MARK else spec
            longs.append(LongOption(name, "--" + (alias or name), arity))
        return cls(shorts, tuple(longs), abbreviations, equals_strips)

    def long_named(self, name: str) -> LongOption | None:
        return next((o for o in self.long if o.name == name), None)


@dataclass(frozen=True)
class Resolved:
    """What ``--written`` is to the parser: one option, or why it is none."""

    option: LongOption | None
    doubt: str = ""


def resolve_long(table: OptionTable, written: str) -> Resolved:
    """The long option ``--written`` (the name, without dashes or ``=value``) stands for.

    The rule of GNU getopt_long: an exact name wins; otherwise, where abbreviations are
    taken, the options the name is a prefix of — one, or several that are aliases of
    each other (same meaning, same kind of value) — are that option; several others
    are ambiguous, and none is an unknown option."""
    exact = table.long_named(written)
    if exact is not None:
        return Resolved(exact)
    if not table.abbreviations:
        return Resolved(None, f"'--{written}' is not an option this check knows")
    candidates = [o for o in table.long if o.name.startswith(written)]
    if not candidates:
        return Resolved(None, f"'--{written}' is not an option this check knows")
    if len({(o.key, o.arity) for o in candidates}) > 1:
        names = ", ".join("--" + o.name for o in candidates)
        return Resolved(None, f"'--{written}' is ambiguous ({names})")
    return Resolved(candidates[0])


def could_abbreviate(written: str, names: Iterable[str]) -> bool:
    """Whether a parser that takes prefixes might read ``--written`` as one of ``names``
    (long option names without dashes), whatever other options it has: used where
    Loom holds no full table of a program's options (git)."""
    name = written.partition("=")[0]
    return bool(name) and any(full.startswith(name) for full in names)


@dataclass(frozen=True)
class Given:
    """One option on the command line: its key and value (None when it has none), and
    the index of the argument word the value came from."""

    key: str
    value: str | None = None
    value_index: int = -1


@dataclass(frozen=True)
class ParsedArguments:
    """An argument list as the program reads it.

    ``operands`` and ``late_options`` hold ``(index, text)`` pairs. ``late_options`` are
    option words found after the first operand: GNU getopt permutes them to the front,
    but under ``POSIXLY_CORRECT`` they are operands, so they are read both ways."""

    given: tuple[Given, ...] = ()
    operands: tuple[tuple[int, str], ...] = ()
    late_options: tuple[tuple[int, str], ...] = ()
    doubt: str = ""

    def keys(self) -> frozenset[str]:
        return frozenset(g.key for g in self.given)

    def values(self) -> tuple[tuple[int, str], ...]:
        return tuple((g.value_index, g.value) for g in self.given if g.value is not None)


def parse_arguments(table: OptionTable, args: Sequence[str]) -> ParsedArguments:
    """``args`` (the words after the command name) read as the program's parser will;
    ``doubt`` is set, and the rest is partial, when they cannot be read with certainty."""
    given: list[Given] = []
    operands: list[tuple[int, str]] = []
    late: list[tuple[int, str]] = []

    def stop(why: str) -> ParsedArguments:
        return ParsedArguments(tuple(given), tuple(operands), tuple(late), why)

    k = 0
    while k < len(args):
        word = args[k]
        if word == "--":
            operands.extend((j, args[j]) for j in range(k + 1, len(args)))
            break
        if not word.startswith("-") or word == "-":
            operands.append((k, word))
            k += 1
            continue
        if operands:
            late.append((k, word))
        if word.startswith("--"):
            written, eq, value = word[2:].partition("=")
            resolved = resolve_long(table, written)
            option = resolved.option
            if option is None:
                return stop(resolved.doubt)
            if eq and option.arity == "none":
                return stop(f"'--{option.name}' takes no value")
            if eq:
                given.append(Given(option.key, value, k))
            elif option.arity == "required":
                if k + 1 >= len(args):
                    return stop(f"'--{option.name}' needs a value")
                k += 1
                given.append(Given(option.key, args[k], k))
            else:
                given.append(Given(option.key))
            k += 1
            continue
        j = 1
        while j < len(word):
            letter = word[j]
            arity = table.short.get(letter)
            if arity is None:
                return stop(f"'-{letter}' is not an option this check knows")
            key = "-" + letter
            rest = word[j + 1:]
            if arity == "none":
                given.append(Given(key))
                j += 1
                continue
            if rest:
                glued = rest[1:] if table.equals_strips and rest.startswith("=") else rest
                given.append(Given(key, glued, k))
            elif arity == "required":
                if k + 1 >= len(args):
                    return stop(f"'-{letter}' needs a value")
                k += 1
                given.append(Given(key, args[k], k))
            else:
                given.append(Given(key))
            break
        k += 1
    return ParsedArguments(tuple(given), tuple(operands), tuple(late))
