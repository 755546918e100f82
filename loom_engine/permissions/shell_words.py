"""The shapes a bash command line is read into: words, redirections, simple commands.

:mod:`.shell` fills them from the syntax tree; :mod:`.commands` and the manager read
them. They live apart from both so the syntax walker and its users share them without
importing each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
RedirectKind = Literal["write", "read", "dup", "heredoc", "herestring"]


class ShellDoubt(Exception):
    """The command uses syntax this analysis cannot follow safely."""


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    Expansions (``$VAR``, ``$(...)``, backticks) stay in ``text`` as written, and
    ``literal`` is false for such words: their run-time value is unknown.
    """

    text: str
    raw: str
    literal: bool = True
    glob: bool = False          # unquoted * ? or [ : pathname expansion may happen
    brace: bool = False         # unquoted {a,b} or {1..3}: brace expansion happens
    quoted: bool = False        # some part was quoted or escaped
    procsub: bool = False       # a <(...) or >(...) word: a /dev/fd path at run time
    glob_parent_dots: bool = False  # a glob component starting with '.' may match '..'
    tilde: bool = False         # starts with an unquoted '~': tilde expansion happens


@dataclass(frozen=True)
class Redirect:
    op: str
    kind: RedirectKind
    target: Word
    fd: int | None = None


@dataclass(frozen=True)
class SimpleCommand:
    """One program invocation: ``NAME=value ... word ... redirections``."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    # `bash -c 'script'` / `sh -c`: the literal script was parsed without doubt and its
    # commands are in the same analysis (they come right before this one).
    walked_script: bool = False

    @property
    def display(self) -> str:
        """The command as written (shortened), for messages."""
        text = " ".join(w.raw for w in (*self.assignments, *self.words)) or " ".join(
            f"{r.op}{r.target.raw}" for r in self.redirects)
        return text if len(text) <= 120 else text[:117] + "..."


@dataclass(frozen=True)
class CommandAnalysis:
    commands: tuple[SimpleCommand, ...]
    # Non-empty when the line uses syntax the analysis cannot follow; ``commands``
    # then holds only what was understood before that point.
    doubt: str = ""
