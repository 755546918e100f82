"""A simple command as bash will run it: its words expanded the way bash passes them to
the program, and every directory the commands of a line may run in (``cd`` followed).

Kept apart from :mod:`.command_check`, which judges what these functions work out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .commands import cd_target
from .expansion import Unknowable, expand_glob, expand_tilde, logical_cd, physical
from .shell import ShellDoubt, SimpleCommand, Word

# Past this many directories the line counts as one whose `cd`s cannot be followed.
_MAX_CWDS = 32


def expand_words(words: Sequence[Word], cwd: Path) -> tuple[tuple[Word, ...], list[str]]:
    """The words as bash passes them to the program when run in ``cwd`` (tilde and
    pathname expansion), and the directories the expansion lists. Raises Unknowable."""
    out: list[Word] = []
    listed: list[str] = []
    for word in words:
        if word.procsub or not word.literal:
            out.append(word)
            continue
        text = expand_tilde(word.raw, word.text, cwd)
        if not word.glob:
            out.append(word if text == word.text else replace(word, text=text))
            continue
        if word.quoted:
            raise Unknowable(f"{word.raw} mixes quoted text and a pattern; which characters "
                             "are wildcards cannot be told")
        result = expand_glob(text, cwd)
        listed.extend(result.listed)
        if result.words == (text,):
            out.append(replace(word, text=text, glob=False))
        else:
            out.extend(Word(text=m, raw=m) for m in result.words)
    return tuple(out), listed


def user_path(word: str) -> str:
    """A path word with a leading '~' read as the home directory: what is left of one
    after bash's expansion is an option's value (``--file=~/x``), which bash or the
    program may still expand."""
    return os.path.expanduser(word) if word.startswith("~") else word


def cd_destinations(target: str, base: Path) -> list[Path]:
    """Where ``cd target`` from the logical ``base`` may land: bash's logical answer
    (``..`` taken as text) and, should that fail, the physical one. Raises ShellDoubt."""
    raw_target = target
    try:
        target = expand_tilde(target, target, base)
    except Unknowable as exc:
        raise ShellDoubt(str(exc)) from None
    if os.environ.get("CDPATH") and not target.startswith(("/", "./", "../")) \
            and target not in (".", ".."):
        raise ShellDoubt(f"'cd {raw_target}' may go through $CDPATH, which this check "
                         "does not follow")
    logical = logical_cd(base, target)
    try:
        real = physical(target, base)
    except Unknowable as exc:
        raise ShellDoubt(str(exc)) from None
    return [logical] if real == logical else [logical, real]


def possible_cwds(commands: Sequence[SimpleCommand], base: Path) -> tuple[list[Path], bool]:
    """Every directory a command might run in, as bash names it (logically). A ``cd``
    anywhere (even in a subshell or after ``||``) adds its target for the whole line:
    over-approximating keeps a relative path from being checked against the wrong
    folder."""
    cwds = [base]
    for cmd in commands:
        if cmd.words and cmd.words[0].text in ("source", "."):
            return cwds, False  # a sourced script may change directory
        try:
            target = cd_target(cmd.words)
            if target is None:
                continue
            for current in list(cwds):
                for nxt in cd_destinations(target, current):
                    if nxt not in cwds:
                        cwds.append(nxt)
        except ShellDoubt:
            return cwds, False
        if len(cwds) > _MAX_CWDS:
            return cwds, False
    return cwds, True
