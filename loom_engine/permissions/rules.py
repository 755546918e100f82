"""Permission rules: ``Tool`` or ``Tool(specifier)``.

* ``bash(git diff:*)`` allows ``git diff`` followed by anything; ``bash(make test)``
  allows exactly ``make test``. Both compare shell words, so ``git diff:*`` never
  matches ``git difftool`` and quoting or spacing does not matter.
* File tools take gitignore-style globs: ``edit_file(src/**)``, ``read_file(~/notes/*)``
  (see :mod:`.paths`).
* ``read`` names every tool that reads files (read_file, glob, grep, ls) and ``edit``
  (alias ``write``) every tool that writes them (write_file, edit_file, multi_edit,
  apply_patch), so ``edit(src/**)`` covers them all: a call's target says whether it
  reads or writes, and each tool declares it (see :mod:`.tool_facts`).
* ``web_fetch(domain:docs.python.org)`` allows fetching from that host;
  ``web_fetch(domain:*.python.org)`` from its subdomains (not the domain itself).
* MCP tools: ``mcp__server__tool`` names one tool, ``mcp__server__*`` and
  ``mcp__server`` every tool of that server.
* Tool names are case-insensitive (``Bash(...)`` works too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .paths import validate_path_spec
from .shell import rule_words
from .tool_facts import BUILTIN_TOOL_FACTS, READ_GROUP, WRITE_GROUPS

Behavior = Literal["allow", "deny", "ask"]

# The built-in file tools' rules must name valid path patterns (another tool's rule keeps
# whichever readings are valid, below).
_FILE_TOOLS = BUILTIN_TOOL_FACTS.file_tools
COMMAND_TOOLS: frozenset[str] = frozenset({"bash"})
URL_TOOLS: frozenset[str] = frozenset({"web_fetch"})

_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*|[Mm][Cc][Pp]__[A-Za-z0-9_-]+__\*")
# A host name (ASCII: an international name in its xn-- form), optionally behind `*.`
# for "any subdomain of", or an IPv6 address.
_DOMAIN = re.compile(r"(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*"
                     r"|[0-9a-f:.]*:[0-9a-f:.]*")


@dataclass(frozen=True)
class Rule:
    tool: str                     # lower case
    specifier: str | None = None  # None: every call of the tool
    # For command rules: the words to compare, and whether more may follow.
    words: tuple[str, ...] = ()
    prefix: bool = False
    path_rule: bool = False       # the specifier is a valid path pattern
    domain: str = ""              # for URL rules: a host, or `*.` and a domain

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    def __str__(self) -> str:
        return self.text

    def names_tool(self, tool: str, *, write: bool | None = None) -> bool:
        """True when the rule is about ``tool`` (directly or through a group name);
        ``write`` says whether the call writes files (None: not a file access)."""
        if self.tool == tool:
            return True
        if write is None:
            return False
        return self.tool in WRITE_GROUPS if write else self.tool == READ_GROUP

    def matches_host(self, host: str) -> bool:
        """Whether this URL rule covers fetching from ``host`` (lower case)."""
        if self.specifier is None:
            return True
        if self.domain.startswith("*."):
            return host.endswith(self.domain[1:])
        return bool(self.domain) and host == self.domain

    def matches_words(self, words: Sequence[str]) -> bool:
        """Whether this command rule covers a command with these words."""
        if self.specifier is None:
            return True
        if not self.words:
            return False
        if self.prefix:
            return tuple(words[: len(self.words)]) == self.words
        return tuple(words) == self.words


def is_rule_domain(host: str) -> bool:
    """Whether a URL rule can name ``host`` (see :func:`parse_rule`)."""
    return _DOMAIN.fullmatch(host) is not None


def parse_rule(text: str) -> Rule:
    """Parse ``Tool`` or ``Tool(specifier)``; ValueError with a one-line reason otherwise."""
    original = text
    text = text.strip()

    def bad(why: str) -> ValueError:
        return ValueError(f"invalid permission rule {original!r}: {why}")

    if not text:
        raise bad("empty rule")
    open_at = text.find("(")
    if open_at < 0:
        if text.endswith(")"):
            raise bad("missing '('")
        if not _TOOL_NAME.fullmatch(text):
            raise bad(f"'{text}' is not a tool name")
        return Rule(text.lower())
    name = text[:open_at].strip()
    if not name:
        raise bad("missing tool name before '('")
    if not _TOOL_NAME.fullmatch(name):
        raise bad(f"'{name}' is not a tool name")
    if not text.endswith(")"):
        raise bad("missing ')'")
    spec = text[open_at + 1:-1].strip()
    tool = name.lower()
    if not spec:
        raise bad(f"empty specifier (write '{tool}' alone to match every call)")
    if tool in COMMAND_TOOLS:
        try:
            words, prefix = _parse_command_spec(spec)
        except ValueError as exc:
            raise bad(str(exc)) from None
        return Rule(tool, spec, words, prefix)
    if tool in URL_TOOLS:
        kind, _, domain = spec.partition(":")
        domain = domain.strip().lower().rstrip(".")
        if kind.strip() != "domain" or not is_rule_domain(domain):
            raise bad(f"write {tool}(domain:example.com) or {tool}(domain:*.example.com)")
        return Rule(tool, spec, domain=domain)
    if tool in _FILE_TOOLS or tool == READ_GROUP or tool in WRITE_GROUPS:
        try:
            validate_path_spec(spec)
        except ValueError as exc:
            raise bad(str(exc)) from None
        return Rule(tool, spec, path_rule=True)
    # Another tool (a plugin's, say): its target decides how the specifier is read, so
    # keep whichever readings are valid.
    try:
        words, prefix = _parse_command_spec(spec)
    except ValueError:
        words, prefix = (), False
    try:
        validate_path_spec(spec)
        path_rule = True
    except ValueError:
        path_rule = False
    return Rule(tool, spec, words, prefix, path_rule)


def _parse_command_spec(spec: str) -> tuple[tuple[str, ...], bool]:
    prefix = spec.endswith(":*")
    core = spec[:-2].rstrip() if prefix else spec
    if not core:
        raise ValueError("empty command before ':*'")
    if ":*" in core:
        raise ValueError("':*' may only end the rule, as in bash(git diff:*)")
    if re.search(r"(^|\s)\*$", core):
        hint = core[:-1].rstrip()
        raise ValueError(f"a trailing ' *' is not a wildcard; write '{hint}:*' for a prefix rule"
                         if hint else "write 'bash' alone to match every command")
    words = rule_words(core)
    return words, prefix
