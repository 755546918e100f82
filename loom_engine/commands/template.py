"""A command's body with the user's arguments put in.

``$ARGUMENTS`` is everything typed after the command name, as typed. ``$ARGUMENTS[N]``
and ``$N`` are single arguments counted from 0 (``$0`` is the first, as Claude Code
now counts), split the way a shell splits words (quotes group words and are taken
off). An argument that was not given is empty. A body with no placeholder at all gets
the arguments appended as a last ``ARGUMENTS: …`` line, so what was typed is never lost.

`` !`command` `` marks a shell command whose output replaces it; :func:`shell_snippets`
finds them, the runner runs them (through the permission check).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS\b|\$(\d+)")
# "!`cmd`" at the start of a line or after a space or bracket (not inside a word).
_SHELL = re.compile(r"(?<![\w`!])!`([^`\n]+)`")


def split_arguments(arguments: str) -> list[str]:
    """The words of ``arguments`` as a shell splits them; plain whitespace splitting
    when the quotes do not close."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def has_placeholder(body: str) -> bool:
    return _PLACEHOLDER.search(body) is not None


def substitute(body: str, arguments: str) -> str:
    """The body with ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$N`` filled in (in one pass:
    an argument holding ``$1`` stays as typed)."""
    arguments = arguments.strip()
    words = split_arguments(arguments)

    def value(match: re.Match[str]) -> str:
        index = match.group(1) or match.group(2)
        if index is None:
            return arguments
        position = int(index)
        return words[position] if position < len(words) else ""

    if not has_placeholder(body):
        return f"{body}\n\nARGUMENTS: {arguments}" if arguments else body
    return _PLACEHOLDER.sub(value, body)


@dataclass(frozen=True)
class ShellSnippet:
    command: str
    start: int
    end: int


def shell_snippets(text: str) -> list[ShellSnippet]:
    """Each `` !`command` `` of the text, in order."""
    return [ShellSnippet(m.group(1).strip(), m.start(), m.end()) for m in _SHELL.finditer(text)
            if m.group(1).strip()]


def splice(text: str, snippets: list[ShellSnippet], outputs: list[str]) -> str:
    """The text with each snippet replaced by its output."""
    out: list[str] = []
    last = 0
    for snippet, output in zip(snippets, outputs, strict=True):
        out.append(text[last:snippet.start])
        out.append(output)
        last = snippet.end
    out.append(text[last:])
    return "".join(out)
