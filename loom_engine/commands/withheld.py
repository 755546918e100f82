"""The note about a project command's withheld ``allowed-tools``, when it is worth giving.

A command file the project ships may not widen permissions, so its ``allowed-tools``
are not granted (see :mod:`.invoke`). Saying so matters only for the rules that would
have spared a question — ``bash(git diff:*)`` and reads inside the workspace are never
asked about anyway — and only the first time the command runs in a conversation, not
on every use.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..messages import Message
from ..permissions.rules import COMMAND_TOOLS, parse_rule
from ..permissions.targets import CommandRun
from ..permissions.tool_facts import READ_GROUP

if TYPE_CHECKING:
    from ..permissions.manager import PermissionManager


def rules_that_would_ask(permissions: PermissionManager | None, rules: Iterable[str], cwd: Path) -> tuple[str, ...]:
    """The rules naming calls that are asked about without them (withheld, they change something)."""
    if permissions is None:  # no rules at all: nothing is ever asked
        return ()
    return tuple(text for text in rules if _asks(permissions, text, cwd))


def _asks(permissions: PermissionManager, text: str, cwd: Path) -> bool:
    try:
        rule = parse_rule(text)
    except ValueError:
        return True  # a rule Loom cannot read: say it was not granted
    if rule.tool in COMMAND_TOOLS:
        if not rule.words:
            return True  # every command: most of them ask
        decision = permissions.check("bash", CommandRun(" ".join(rule.words), str(cwd)), is_read_only=False,
                                     cwd=cwd)
        return decision.behavior != "allow"
    reads = permissions.tool_facts.reads_files | {READ_GROUP}
    if rule.tool in reads:
        # Reading inside the workspace asks nothing; a rule for a path outside it would.
        spec = rule.specifier or ""
        return spec.startswith(("/", "~")) or os.path.isabs(spec) or spec.startswith("..")
    return True


def used_before(history: Sequence[Message], name: str) -> bool:
    """Whether ``/name`` was already run in this conversation (its prompt is in it)."""
    return any(m.role == "user" and m.meta.get("command") == name for m in history)


def withheld_note(name: str, rules: Sequence[str], permissions: PermissionManager | None, cwd: Path,
                  history: Sequence[Message]) -> str | None:
    """The one line to show for ``/name``'s withheld rules; None when there is nothing to say."""
    if not rules or used_before(history, name):
        return None
    asking = rules_that_would_ask(permissions, rules, cwd)
    if not asking:
        return None
    return (f"/{name}: its allowed-tools ({', '.join(asking)}) are not granted: the command comes from the "
            "project, whose files cannot widen permissions (put it in your own commands folder to allow "
            "them); each action asks as usual")
