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

import shlex
from collections.abc import Sequence

from ._bash_tree import walk_source  # the grammar itself loads on first use
from .shell_words import (
    ASSIGNMENT,
    CommandAnalysis,
    Redirect,
    RedirectKind,
    ShellDoubt,
    SimpleCommand,
    Word,
)

__all__ = ["ASSIGNMENT", "MAX_ANALYSED_BYTES", "CommandAnalysis", "Redirect", "RedirectKind", "ShellDoubt",
           "SimpleCommand", "Word", "analyze", "quote_words", "rule_words"]

# Above this size a line is not analysed at all (it asks): no person reviews 64 KiB of
# shell, and the parse and walk grow with the size (a 320 KB line took 8 s before).
MAX_ANALYSED_BYTES = 64 * 1024


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
