"""Claude Code's permission rules, read as Loom's (see :mod:`.rules` for Loom's syntax).

A ``.claude/settings.json`` names rules Claude Code's way. Most map one to one:

* tool names: ``Bash``, ``Glob``, ``Grep``, ``LS``, ``WebFetch``, ``MultiEdit``, ``Task``...
  are Loom's tools (:mod:`loom_engine.tool_names`); ``Read`` covers every tool that reads
  files and ``Edit`` every tool that edits them, as in Claude Code (Loom's ``read`` and
  ``edit`` groups); ``mcp__server__tool`` is the same in both;
* paths: ``//abs/path`` is an absolute path (Loom's ``/abs/path``), ``/path`` is relative
  to the project root (Loom's ``./path``), ``~/path``, ``./path`` and ``path`` are the same
  in both (gitignore-style);
* commands: ``Bash(npm run test:*)`` is a prefix rule in both; Claude Code's newer
  ``Bash(npm run *)`` (a trailing `` *`` after a space) is the same prefix rule.

What Loom cannot match exactly never widens: such an allow rule is left out (or, for a
wildcard glued to the last word, narrowed to whole words), and such a deny or ask rule
becomes an ask rule over everything it could match — the command's literal leading
words, or the whole tool — so a question comes up rather than a call slipping through.
Each such rule carries a note that says what was done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..tool_names import LOOM_TOOL_NAMES
from .rules import COMMAND_TOOLS, Behavior, parse_rule
from .shell import rule_words
from .tool_facts import BUILTIN_TOOL_FACTS, READ_GROUP

# Claude Code's names whose rules cover a group of Loom's tools.
_GROUPS = {"read": READ_GROUP, "edit": "edit"}
# ``Write(...)`` is Claude Code's Write tool alone: allowing it allows write_file only;
# denying or asking it covers every tool that writes (stricter, never wider).
_WRITE = "write"
_PATH_TOOLS = BUILTIN_TOOL_FACTS.file_tools | {READ_GROUP, "edit", _WRITE}


@dataclass(frozen=True)
class ClaudeRule:
    """One rule of a Claude Code settings file, as Loom applies it."""

    original: str
    behavior: Behavior
    rule: str | None  # Loom's rule text; None: left out
    note: str | None = None  # why ``rule`` is not the exact same rule (None: it is)


def claude_rule(text: str, behavior: Behavior) -> ClaudeRule:
    """Loom's rule for Claude Code's ``text`` in a ``behavior`` list (see the module)."""
    original = text
    text = text.strip()
    name, paren, rest = text.partition("(")
    tool = _loom_tool(name.strip(), behavior)
    if not paren:
        return _checked(original, behavior, tool)
    if not rest.endswith(")"):
        return _unreadable(original, behavior, tool, "missing ')'")
    spec = rest[:-1].strip()
    if tool in COMMAND_TOOLS:
        return _command_rule(original, behavior, tool, spec)
    if tool in _PATH_TOOLS:
        spec = _loom_path(spec)
    return _checked(original, behavior, f"{tool}({spec})")


def _loom_tool(name: str, behavior: Behavior) -> str:
    lower = name.lower()
    if lower in _GROUPS:
        return _GROUPS[lower]
    if lower == _WRITE:
        return "write_file" if behavior == "allow" else _WRITE
    return LOOM_TOOL_NAMES.get(lower.replace("_", ""), name)


def _loom_path(spec: str) -> str:
    if spec.startswith("//"):
        return "/" + spec.lstrip("/")  # an absolute path
    if spec.startswith("/"):
        return "." + spec  # relative to the project root
    return spec


def _checked(original: str, behavior: Behavior, rule: str, note: str | None = None) -> ClaudeRule:
    try:
        parse_rule(rule)
    except ValueError as error:
        tool = rule.partition("(")[0]
        return _unreadable(original, behavior, tool, str(error).partition(": ")[2] or str(error))
    return ClaudeRule(original, behavior, rule, note)


def _unreadable(original: str, behavior: Behavior, tool: str, why: str) -> ClaudeRule:
    """A rule Loom cannot read: an allow rule is left out; a deny or ask rule asks for
    every call of its tool (when the tool has a name Loom can write)."""
    if behavior == "allow":
        return ClaudeRule(original, behavior, None, f"{why}; left out")
    try:
        parse_rule(tool)
    except ValueError:
        return ClaudeRule(original, behavior, None, f"{why}; left out")
    return ClaudeRule(original, "ask", tool, f"{why}; every call of {tool} asks instead")


def _command_rule(original: str, behavior: Behavior, tool: str, spec: str) -> ClaudeRule:
    stars = spec.count("*")
    if (spec.endswith(":*") and stars == 1) or stars == 0:
        return _checked(original, behavior, f"{tool}({spec})")
    if spec == "*":
        return _checked(original, behavior, tool)
    if stars == 1 and spec.endswith("*"):
        core = spec[:-1]
        if core[-1:].isspace():  # `npm run *`: the same as `npm run:*` (the `*` may match nothing)
            return _checked(original, behavior, f"{tool}({core.rstrip()}:*)")
        if behavior == "allow":  # `npm run test*`: allow the whole-word part only (narrower)
            return _checked(original, behavior, f"{tool}({core}:*)",
                            f"a '*' glued to a word matches whole words only here: {tool}({core}:*)")
    return _leading_words(original, behavior, tool, spec)


def _leading_words(original: str, behavior: Behavior, tool: str, spec: str) -> ClaudeRule:
    """A ``*`` inside a command: an allow rule is left out; a deny or ask rule asks for
    every command that starts with the words before the first ``*``."""
    why = "a '*' inside a command cannot be matched exactly"
    if behavior == "allow":
        return ClaudeRule(original, behavior, None, f"{why}; left out")
    head = spec[:spec.index("*")]
    # A word the `*` is glued to is not a whole word: only the words before it count.
    head = head if head[-1:].isspace() else re.sub(r"\S*$", "", head)
    try:
        words = rule_words(head) if head.strip() else ()
    except ValueError:
        words = ()
    rule = f"{tool}({head.strip()}:*)" if words else tool
    return ClaudeRule(original, "ask", rule, f"{why}; every call of {rule} asks instead")
