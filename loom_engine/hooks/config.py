"""Hook configuration in Claude Code's schema, as Loom holds it.

A settings file's ``hooks`` table maps an event name to a list of matcher groups::

    {"PreToolUse": [{"matcher": "Bash|Write",
                     "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 10}]}]}

(the same structure in TOML: ``[[hooks.PreToolUse]]`` with ``matcher`` and
``[[hooks.PreToolUse.hooks]]``). Each command becomes one :class:`HookCommand` that
remembers its file, so the UI can say where a hook comes from and the CLI can ask the
user to trust a project's hooks one entry at a time (by :attr:`HookCommand.entry_hash`).
Which hooks are trusted is decided outside the engine; the engine runs the
:class:`HookSet` it is given.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .pins import Pin

HookEventName = Literal[
    "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
    "PostToolUseFailure", "Stop", "SubagentStop", "PreCompact", "PostCompact", "Notification"]
HOOK_EVENTS: tuple[HookEventName, ...] = get_args(HookEventName)

DEFAULT_TIMEOUT_S = 60.0
_PLAIN_NAMES = re.compile(r"[A-Za-z0-9_\-]+(\|[A-Za-z0-9_\-]+)*")


@dataclass(frozen=True)
class HookCommand:
    """One ``{"type": "command"}`` entry, with the event and matcher it sits under."""

    event: HookEventName
    matcher: str  # "" or "*" for all; "A|B" plain names; otherwise a regular expression
    command: str
    args: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    # A timeout or crash counts as a block (Loom's own key; Claude Code has none).
    fail_closed: bool = False
    source: str = ""  # how its file is named to the user: "user config (~/...)", ".claude/settings.json"
    in_project: bool = False  # from a file inside the workspace: runs only once trusted
    # The folders the hook's code lives in, as the user trusted them (see .pins). A change
    # since (by a pull, or by an edit in this session) keeps the hook from running until
    # the user is asked again. Not part of the entry: set by whoever trusts.
    pinned: tuple[Pin, ...] = field(default=(), compare=False)

    @property
    def entry_hash(self) -> str:
        """What the user trusts: the entry as it would run, with its file. Any change asks again."""
        canonical = json.dumps([self.source, self.event, self.matcher, self.command, list(self.args),
                                self.timeout_s, self.fail_closed], separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def matches(self, *names: str) -> bool:
        """Whether the matcher accepts any of ``names`` (a tool's Claude Code name and Loom's,
        a SessionStart source, a Notification type). Events without a matcher match always."""
        return matcher_matches(self.matcher, names)


def matcher_matches(matcher: str, names: Iterable[str]) -> bool:
    matcher = matcher.strip()
    if matcher in ("", "*"):
        return True
    names = [n for n in names if n]
    if _PLAIN_NAMES.fullmatch(matcher):
        wanted = set(matcher.split("|"))
        return any(n in wanted for n in names)
    try:
        pattern = re.compile(matcher)
    except re.error:
        return False  # reported when the file is read (see parse_hooks)
    return any(pattern.fullmatch(n) for n in names)


@dataclass(frozen=True)
class HookSet:
    """The hooks in force, in the order their files were read (user, project, local)."""

    hooks: tuple[HookCommand, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def for_event(self, event: HookEventName, *names: str) -> tuple[HookCommand, ...]:
        """The hooks of ``event`` whose matcher accepts one of ``names`` (all of them when
        no name is given)."""
        return tuple(h for h in self.hooks if h.event == event and (not names or h.matches(*names)))

    def restricted(self, keep: Iterable[HookCommand]) -> HookSet:
        kept = set(keep)
        return HookSet(tuple(h for h in self.hooks if h in kept))


def parse_hooks(table: Any, *, source: str, in_project: bool) -> tuple[list[HookCommand], list[str]]:
    """The commands of one file's ``hooks`` table, and one line per problem (the entry
    with the problem is skipped; the rest of the file still counts)."""
    hooks: list[HookCommand] = []
    problems: list[str] = []
    if not isinstance(table, Mapping):
        return [], [f"{source}: hooks must be a table of event names"]
    for event, groups in table.items():
        if event not in HOOK_EVENTS:
            problems.append(f"{source}: hooks.{event}: unknown event (known: {', '.join(HOOK_EVENTS)})")
            continue
        if not isinstance(groups, list):
            problems.append(f"{source}: hooks.{event}: must be a list of matcher groups")
            continue
        for index, group in enumerate(groups):
            where = f"{source}: hooks.{event}[{index}]"
            if not isinstance(group, Mapping):
                problems.append(f"{where}: must be a table with matcher and hooks")
                continue
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                problems.append(f"{where}: matcher must be a string")
                continue
            if matcher.strip() not in ("", "*") and not _PLAIN_NAMES.fullmatch(matcher.strip()):
                try:
                    re.compile(matcher)
                except re.error as error:
                    problems.append(f"{where}: matcher {matcher!r} is not a valid regular expression: {error}")
                    continue
            entries = group.get("hooks", [])
            if not isinstance(entries, list):
                problems.append(f"{where}: hooks must be a list")
                continue
            for number, entry in enumerate(entries):
                parsed = _command(entry, event, matcher, source, in_project)
                if isinstance(parsed, str):
                    problems.append(f"{where}.hooks[{number}]: {parsed}")
                else:
                    hooks.append(parsed)
    return hooks, problems


def _command(entry: Any, event: HookEventName, matcher: str, source: str, in_project: bool) -> HookCommand | str:
    if not isinstance(entry, Mapping):
        return "must be a table with type and command"
    kind = entry.get("type", "command")
    if kind != "command":
        return f"type {kind!r} is not supported (only \"command\")"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "command must be a non-empty string"
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return "args must be a list of strings"
    timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        return "timeout must be a positive number of seconds"
    fail_closed = entry.get("fail_closed", False)
    if not isinstance(fail_closed, bool):
        return "fail_closed must be true or false"
    return HookCommand(event=event, matcher=matcher, command=command, args=tuple(args), timeout_s=float(timeout),
                       fail_closed=fail_closed, source=source, in_project=in_project)
