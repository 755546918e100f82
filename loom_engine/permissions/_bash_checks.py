"""Where tree-sitter-bash accepts what bash rejects or reads otherwise, and which
``bash -c`` scripts the walker may read (each found by the differential tests)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .shell_words import ShellDoubt, Word

if TYPE_CHECKING:
    from tree_sitter import Node

# Right before a redirection: a whole word that bash would take as its file descriptor.
# (`2>&1>x` is fine: after `>&` digits are the duplicated descriptor.)
_GLUED_FD = re.compile(rb"(?:^|[\s;|(<>]|(?<![<>])&)(?:(\{[A-Za-z_]\w*\})|\d+)$")
_SHELLS_WALKED = frozenset({"bash", "sh"})
_SHELL_FLAGS = re.compile(r"[-+][cefuvxnCl]+")  # -l: the profile is the user's own code
_SHELL_LONG_OPTIONS = frozenset({"--norc", "--noprofile", "--posix"})
_ASSIGNMENT_START = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def inline_script(words: Sequence[Word]) -> str | None:
    """The literal script of ``bash -c 'script'`` / ``sh -c``, or None when the command is
    no such call. Raises ShellDoubt for a ``-c`` whose script cannot be read (an
    expansion) or whose options change how it runs (``-i``, ``-O extglob``...)."""
    if not words or not words[0].literal or words[0].text.rpartition("/")[2] not in _SHELLS_WALKED:
        return None
    k, has_c, known = 1, False, True
    while k < len(words):
        w = words[k]
        if not w.literal or not w.text.startswith(("-", "+")) or w.text in ("-", "--"):
            k += 1 if w.literal and w.text in ("-", "--") else 0
            break
        if w.text in ("-o", "+o", "-O", "+O"):
            known = known and w.text in ("-o", "+o")  # -O extglob changes the syntax
            k += 2
            continue
        if not w.text.startswith("--"):
            has_c = has_c or "c" in w.text  # -c, -lc, -xec ...
            known = known and bool(_SHELL_FLAGS.fullmatch(w.text))
        elif w.text not in _SHELL_LONG_OPTIONS:
            known = False
        k += 1
    if not has_c:
        return None
    if not known or k >= len(words) or not words[k].literal:
        raise ShellDoubt(f"'{words[0].text} -c' runs a script this check cannot read")
    return words[k].text


def check_not_empty(node: Node) -> None:
    """`{ }`, `( )` or `if a; then fi` is a syntax error for bash; the grammar allows it."""
    needed = {"compound_statement": 1, "subshell": 1, "elif_clause": 2, "else_clause": 1,
              "if_statement": 2}.get(node.type, 0)
    present = [c for c in node.named_children
               if c.type not in ("comment", "elif_clause", "else_clause")]
    if len(present) < needed:
        raise ShellDoubt(f"an empty '{node.children[0].type if node.children else node.type}' "
                         "block (a syntax error for bash)")


def check_negation(node: Node) -> None:
    """Bash accepts '!' only at the start of a pipeline; the grammar anywhere in it."""
    if node.type != "pipeline":
        return
    for child in node.named_children[1:]:
        while True:
            if child.type == "negated_command":
                raise ShellDoubt("'!' inside a pipeline (a syntax error for bash)")
            if not child.children or not child.children[0].is_named:
                break
            child = child.children[0]


def looks_like_assignment(raw: str) -> bool:
    return _ASSIGNMENT_START.match(raw) is not None



def check_descriptor_before(src: bytes, redirect: Node) -> None:
    """`{fd}>x` (a named descriptor), or `2\\<newline>>x` that the grammar reads as an
    argument `2` and `>x`: bash takes the whole word before the operator as the fd."""
    window = src[max(0, redirect.start_byte - 80):redirect.start_byte].replace(b"\\\n", b"")
    glued = _GLUED_FD.search(window)
    if glued:
        raise ShellDoubt("named file descriptor redirection" if glued.group(1) else
                         "a file descriptor this check reads differently from bash")


def check_comment(src: bytes, comment: Node) -> None:
    """`#` starts a comment only at the start of a word: in `a\\<newline>#x` it does not."""
    before = src[:comment.start_byte]
    while before.endswith(b"\\\n"):
        before = before[:-2]
    if before and before[-1:] not in (b" ", b"\t", b"\n", b";", b"&", b"|", b"(", b")"):
        raise ShellDoubt("a '#' this check reads differently from bash")
