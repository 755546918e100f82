"""Splitting a bash command line into the simple commands it would run.

The permission manager must know every program a command line starts and every file
it redirects into, so that ``bash(git status:*)`` can never let
``git status && rm -rf ~`` through. ``shlex`` cannot tell a quoted ``"&&"`` from the
operator ``&&`` and knows nothing of ``$(...)``, backticks or here-documents, so the
line is parsed with tree-sitter-bash (:mod:`._bash_tree` walks the tree; the grammar is
loaded on first use). The walk follows the subset of bash that coding agents actually
write; anything beyond it (loops, ``case``, functions, arithmetic, complex ``${...}``,
parse errors) is a *doubt* instead of a guess, and the manager asks the user.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# Above this size a line is not analysed at all (it asks): no person reviews 64 KiB of
# shell, and the parse and walk grow with the size (a 320 KB line took 8 s before).
MAX_ANALYSED_BYTES = 64 * 1024
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


def analyze(command: str) -> CommandAnalysis:
    """Every simple command ``command`` would run, including those inside ``$(...)``,
    backticks, process substitutions, subshells, ``{ }`` groups, expanding
    here-documents and the literal script of ``bash -c``. Commands inside a
    substitution come before the command whose words hold it."""
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > MAX_ANALYSED_BYTES:
        return CommandAnalysis((), f"the command is too long to check ({size // 1024} KiB; "
                               f"the limit is {MAX_ANALYSED_BYTES // 1024} KiB)")
    if "\0" in command:
        return CommandAnalysis((), "the command contains a NUL byte")
    from ._bash_tree import walk_source  # the grammar loads on first use

    commands, doubt = walk_source(command)
    return CommandAnalysis(tuple(commands), doubt)


def rule_words(spec: str) -> tuple[str, ...]:
    """The words of a ``bash(...)`` rule specifier, split like a command line.

    Raises ValueError for anything that is not one plain command.
    """
    analysis = analyze(spec)
    if analysis.doubt:
        raise ValueError(analysis.doubt)
    if len(analysis.commands) != 1:
        raise ValueError("a bash rule must name one command, without ; && || | or &")
    cmd = analysis.commands[0]
    if cmd.redirects:
        raise ValueError("a bash rule cannot contain redirections")
    words = (*cmd.assignments, *cmd.words)
    if not cmd.words or not all(w.literal for w in words):
        raise ValueError("a bash rule cannot contain $ expansions or command substitutions")
    return tuple(w.text for w in words)


def quote_words(words: Sequence[str], assignments: int = 0) -> str:
    """Words joined so that a shell reads them back as the same words. The first word
    after the ``assignments`` leading ``NAME=value`` words is the command: quoted when it
    would otherwise read as one more assignment (shlex leaves ``a=`` bare)."""
    quoted = [shlex.quote(w) for w in words]
    command = assignments
    if command < len(words) and quoted[command] == words[command] and ASSIGNMENT.match(words[command]):
        quoted[command] = f"'{words[command]}'"  # bare, so it holds no quote to escape
    return " ".join(quoted)
