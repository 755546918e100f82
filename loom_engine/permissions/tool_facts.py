"""What the permission manager knows about the tools beyond one call's target.

A call's own target already says whether it reads or writes files (so ``read`` and
``edit`` rules cover it through ``FileAccess.write``). Two checks need more:

* a bash command that reads a file, or redirects into one, is checked against the
  rules of every tool that reads (or writes) files: ``read_file(secret/**)`` in the
  deny list also stops ``cat secret/key``;
* plan mode allows the tools that change nothing outside the session, though they
  are not read-only.

Each tool declares these facts (``reads_files``, ``writes_files``, ``session_only``);
``ToolFacts.of(tools)`` collects them, and whoever builds the manager passes them (the
CLI passes its tools'). A manager built without them uses ``BUILTIN_TOOL_FACTS``: the
built-in tools' declarations, written out because the engine does not import the
built-in tools (a test proves the two agree). Leaving a file tool out of the facts
would let a bash read skip that tool's deny rules, so the CLI always passes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

# Rule names that stand for every tool that reads (``read``) or writes (``edit``, alias
# ``write``) files.
READ_GROUP = "read"
WRITE_GROUPS: frozenset[str] = frozenset({"edit", "write"})


class DeclaresFacts(Protocol):
    """A tool, as far as the permission manager goes."""

    name: str
    reads_files: bool
    writes_files: bool
    session_only: bool


@dataclass(frozen=True)
class ToolFacts:
    reads_files: frozenset[str]
    writes_files: frozenset[str]
    session_only: frozenset[str]

    @classmethod
    def of(cls, tools: Iterable[DeclaresFacts]) -> ToolFacts:
        listed = list(tools)
        return cls(reads_files=frozenset(t.name.lower() for t in listed if t.reads_files),
                   writes_files=frozenset(t.name.lower() for t in listed if t.writes_files),
                   session_only=frozenset(t.name.lower() for t in listed if t.session_only))

    def rule_tools(self, *, write: bool) -> frozenset[str]:
        """The tool and group names whose path rules apply to a file read or write that
        is not any one tool's own (a bash command's)."""
        return self.writes_files | WRITE_GROUPS if write else self.reads_files | {READ_GROUP}

    @property
    def file_tools(self) -> frozenset[str]:
        return self.reads_files | self.writes_files


BUILTIN_TOOL_FACTS = ToolFacts(
    reads_files=frozenset({"read_file", "glob", "grep", "ls"}),
    writes_files=frozenset({"write_file", "edit_file", "multi_edit", "apply_patch"}),
    session_only=frozenset({"todo_write", "task", "skill"}),
)
