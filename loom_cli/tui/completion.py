"""What the prompt completes: slash commands, @-mentioned workspace files and
@server:uri MCP resources."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 50_000
_MENTION_RE = re.compile(r"(?:^|(?<=\s))@([^\s@]*)$")


@dataclass(frozen=True)
class Candidate:
    value: str  # what replaces the token being completed
    label: str
    detail: str = ""


@dataclass(frozen=True)
class CompletionContext:
    """The token under the cursor and where it sits in the line."""

    kind: str  # slash | mention
    query: str
    start: int  # column where the replaced token starts
    end: int


def completion_context(line: str, column: int, first_line: bool) -> CompletionContext | None:
    before = line[:column]
    if first_line and before.startswith("/") and " " not in before:
        return CompletionContext("slash", before[1:], 0, column)
    match = _MENTION_RE.search(before)
    if match:
        return CompletionContext("mention", match.group(1), match.start(1) - 1, column)
    return None


def list_workspace_files(root: Path) -> list[str]:
    """Workspace files relative to ``root``, sorted: the files glob lists, at most MAX_FILES.

    The same walk as glob, grep and ls (.gitignore inside a git repository, hidden files
    listed, ``.git`` and symlinks not), so ``@`` never offers a file glob would not find,
    nor hides one it would. Slow on a huge tree: the app calls it in a worker thread.
    """
    # Imported here, in that thread: the builtin_tools package pulls in pydantic and the
    # tool contract, which the TUI's start-up does not otherwise need.
    from builtin_tools._files.walk import walk

    return sorted(entry.rel for entry in itertools.islice(walk(root), MAX_FILES))


def match_files(files: Sequence[str], query: str, limit: int = 12) -> list[Candidate]:
    """Rank paths for an @-query: prefix, then basename prefix, then substring, then subsequence."""
    q = query.lower()
    scored: list[tuple[int, int, str]] = []
    for path in files:
        low = path.lower()
        base = low.rsplit("/", 1)[-1]
        if not q:
            rank = 0 if "/" not in path else 1
        elif low.startswith(q):
            rank = 0
        elif base.startswith(q):
            rank = 1
        elif q in low:
            rank = 2
        elif _subsequence(q, low):
            rank = 3
        else:
            continue
        scored.append((rank, len(path), path))
    scored.sort()
    return [Candidate("@" + path + " ", path) for _, _, path in scored[:limit]]


def match_resources(resources: Sequence[tuple[str, str]], query: str, limit: int = 12) -> list[Candidate]:
    """Rank MCP resources (``server:uri`` and the resource's name) for an @-query: the
    mention's prefix first, then a match anywhere in it or in the name."""
    q = query.lower()
    scored: list[tuple[int, str, str]] = []
    for mention, name in resources:
        low = mention.lower()
        if low.startswith(q):
            rank = 0
        elif q in low or q in name.lower():
            rank = 1
        else:
            continue
        scored.append((rank, mention, name))
    scored.sort()
    return [Candidate(f"@{mention} ", mention, name) for _, mention, name in scored[:limit]]


def match_mentions(files: Sequence[str], resources: Sequence[tuple[str, str]], query: str,
                   limit: int = 12) -> list[Candidate]:
    """Files and MCP resources together; a query with a colon ("time:") looks for a
    resource first."""
    found_resources = match_resources(resources, query, limit) if resources else []
    found_files = match_files(files, query, limit) if files else []
    both = found_resources + found_files if ":" in query else found_files + found_resources
    return both[:limit]


def _subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(ch in it for ch in needle)


def match_commands(commands: Sequence[tuple[str, str]], query: str) -> list[Candidate]:
    """Commands whose name starts with the query, in the given order (built-ins first);
    then namespaced custom commands whose last part does ("/commit" finds /git:commit)."""
    q = query.lower()
    found = [Candidate(f"/{name} ", f"/{name}", help_text) for name, help_text in commands
             if name.lower().startswith(q)]
    found += [Candidate(f"/{name} ", f"/{name}", help_text) for name, help_text in commands
              if ":" in name and not name.lower().startswith(q) and name.lower().rsplit(":", 1)[1].startswith(q)]
    # What was typed in full wins: "/mode" must not run "/model".
    found.sort(key=lambda c: c.label.lower() != f"/{q}")
    return found
