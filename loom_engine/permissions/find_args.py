"""Reading ``find``'s arguments the way GNU find does.

find has no getopt-style options: a few leading options (``-H -L -P -D x -O3``), then
the starting points, then an expression of primaries that each take a fixed number of
words. A primary is matched by its whole name only (``-fol`` is an unknown predicate),
so the table below is the whole of what find accepts; a word it does not hold is a
doubt, and the command asks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .getopt import Given, ParsedArguments

# Each primary and how many words follow it. The actions that run a program take words
# up to ';' or '+'; they are refused before their words matter.
PRIMARIES: dict[str, int] = {
    # options
    "daystart": 0, "depth": 0, "d": 0, "follow": 0, "ignore_readdir_race": 0,
    "noignore_readdir_race": 0, "maxdepth": 1, "mindepth": 1, "mount": 0, "noleaf": 0,
    "nowarn": 0, "warn": 0, "regextype": 1, "xdev": 0, "files0-from": 1, "help": 0,
    "-help": 0, "version": 0, "-version": 0,
    # tests
    "amin": 1, "anewer": 1, "atime": 1, "cmin": 1, "cnewer": 1, "context": 1, "ctime": 1,
    "empty": 0, "executable": 0, "false": 0, "fstype": 1, "gid": 1, "group": 1,
    "ilname": 1, "iname": 1, "inum": 1, "ipath": 1, "iregex": 1, "iwholename": 1,
    "links": 1, "lname": 1, "mmin": 1, "mtime": 1, "name": 1, "newer": 1, "nogroup": 0,
    "nouser": 0, "path": 1, "perm": 1, "readable": 0, "regex": 1, "samefile": 1,
    "size": 1, "true": 0, "type": 1, "uid": 1, "used": 1, "user": 1, "wholename": 1,
    "writable": 0, "xtype": 1,
    # actions
    "delete": 0, "exec": 1, "execdir": 1, "fls": 1, "fprint": 1, "fprint0": 1,
    "fprintf": 2, "ls": 0, "ok": 1, "okdir": 1, "print": 0, "print0": 0, "printf": 1,
    "prune": 0, "quit": 0,
    # operators
    "not": 0, "a": 0, "and": 0, "o": 0, "or": 0,
}
_OPERATORS = frozenset({"(", ")", "!", ","})
# -newerXY: X and Y each one of a(ccess), B(irth), c(hange), m(odification); Y may be
# t (a date instead of a file).
_NEWER = re.compile(r"-newer[aBcm][aBcmt]")
_LEADING = frozenset({"-H", "-L", "-P"})

# What find's options make it do (keys as written).
FIND_FOLLOWS = frozenset({"-L", "-follow"})
FIND_REFUSED = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint",
                          "-fprint0", "-fprintf", "-files0-from"})


def parse_find(args: Sequence[str]) -> ParsedArguments:
    """``args`` (the words after ``find``) as find reads them: the primaries given (with
    the words they take as values) and the starting points as operands."""
    given: list[Given] = []
    operands: list[tuple[int, str]] = []

    def stop(why: str) -> ParsedArguments:
        return ParsedArguments(tuple(given), tuple(operands), (), why)

    k = 0
    while k < len(args):
        word = args[k]
        if word in _LEADING:
            given.append(Given(word))
        elif word == "-D":
            if k + 1 >= len(args):
                return stop("'find -D' needs a value")
            k += 1
            given.append(Given(word, args[k], k))
        elif re.fullmatch(r"-O\d+", word):
            given.append(Given("-O"))
        elif word == "--":
            k += 1
            break
        else:
            break
        k += 1
    while k < len(args) and not _starts_expression(args[k]):
        operands.append((k, args[k]))
        k += 1
    while k < len(args):
        word = args[k]
        if word in _OPERATORS:
            k += 1
            continue
        if not _starts_expression(word):
            return stop(f"find: '{word}' would be a path after the expression")
        takes = PRIMARIES.get(word[1:])
        if takes is None and _NEWER.fullmatch(word):
            takes = 1
        if takes is None:
            return stop(f"'{word}' is not a find primary this check knows")
        if word in FIND_REFUSED:
            return stop(f"'{word}' writes, runs or reads a list of names")
        if takes and k + takes >= len(args):
            return stop(f"'{word}' needs a value")
        given.append(Given(word))
        given.extend(Given(word, args[k + j], k + j) for j in range(1, takes + 1))
        k += takes + 1
    return ParsedArguments(tuple(given), tuple(operands))


def _starts_expression(word: str) -> bool:
    return (word.startswith("-") and word != "-") or word in _OPERATORS
