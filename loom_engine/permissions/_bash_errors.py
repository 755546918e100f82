"""Naming what is wrong with a command line the grammar could not parse.

The parse tree marks an error but rarely says which; a person fixes ``echo "abc``
faster when told "unbalanced double quote" than "syntax error". The doubt itself comes
from the tree: this scan only finds a name for it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

_CLOSERS = {"'": "unbalanced single quote", '"': "unbalanced double quote",
            "`": "unbalanced backquote", ")": "missing ')'"}
# A redirection operator followed by nothing, or by another operator.
_BARE_REDIRECT = re.compile(r"(?:&>>|&>|>>|>\||>&|<&|<>|<<<|>|<)[ \t]*(?:$|[|&;<>()\n])")


def describe_error(text: str, root: Node) -> str:
    if _has_open_heredoc(root):
        return "unterminated here-document"
    return _describe_text(text)


def _describe_text(text: str) -> str:
    stack: list[str] = []
    skeleton: list[str] = []  # the line with quoted text blanked, for the redirect check
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        top = stack[-1] if stack else ""
        if top == "'":
            if c == "'":
                stack.pop()
            skeleton.append("x")
            i += 1
            continue
        if c == "\\":
            skeleton.append("xx")
            i += 2
            continue
        if top in ('"', "`") and c == top:
            stack.pop()
        elif top == '"' and c == "`":
            stack.append("`")
        elif top == '"' and text.startswith("$(", i):
            stack.append(")")
            i += 1
        elif top not in ('"',):
            if c == "#" and (i == 0 or text[i - 1] in " \t\n;&|()"):
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
            if c in "'\"`":
                stack.append(c)
            elif c == "(":
                stack.append(")")
            elif c == ")":
                if top != ")":
                    return "unbalanced ')'"
                stack.pop()
        skeleton.append(c if not stack else "x")
        i += 1
    if stack:
        return _CLOSERS[stack[-1]]
    if _BARE_REDIRECT.search("".join(skeleton)):
        return "a redirection without a target"
    return "a syntax error bash may read differently"


def _has_open_heredoc(root: Node) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" and any(c.type == "heredoc_start" for c in node.children):
            return True
        if node.has_error:
            stack.extend(node.children)
    return False


def is_read_write_operator(node: Node) -> bool:
    """The grammar reads ``<>`` as ``<`` and an error: the one error tolerated."""
    before = node.prev_sibling
    return (node.type == "ERROR" and node.parent is not None and node.parent.type == "file_redirect"
            and node.text == b">" and before is not None and before.type == "<"
            and before.end_byte == node.start_byte)


def only_read_write_errors(root: Node) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing or (node.is_error and not is_read_write_operator(node)):
            return False
        if node.has_error:
            stack.extend(node.children)
    return True
