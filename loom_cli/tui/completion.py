"""What the prompt completes: slash commands and @-mentioned workspace files."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

MAX_FILES = 50_000
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", ".tox"})
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


def _git_files(root: Path) -> list[str] | None:
    try:
        result = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=root, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    files = [f for f in result.stdout.decode("utf-8", "replace").split("\0") if f]
    return files[:MAX_FILES]


def _walk_files(root: Path) -> list[str]:
    """Files under ``root`` honouring .gitignore files, for folders that are not git repos."""
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    files: list[str] = []
    for folder, dirs, names in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        rel_folder = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
        ignore = os.path.join(folder, ".gitignore")
        if os.path.isfile(ignore):
            try:
                with open(ignore, encoding="utf-8", errors="replace") as handle:
                    specs.append((rel_folder, pathspec.GitIgnoreSpec.from_lines(handle)))
            except OSError:
                pass

        def ignored(rel: str, is_dir: bool) -> bool:
            for base, spec in specs:
                if rel.startswith(base):
                    sub = rel[len(base):]
                    if spec.match_file(sub + "/" if is_dir else sub):
                        return True
            return False

        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not ignored(rel_folder + d, True))
        for name in sorted(names):
            rel = rel_folder + name
            if not ignored(rel, False):
                files.append(rel)
                if len(files) >= MAX_FILES:
                    return files
    return files


def list_workspace_files(root: Path) -> list[str]:
    """Workspace files relative to ``root``, gitignore-aware, sorted."""
    files = _git_files(root)
    if files is None:
        files = _walk_files(root)
    return sorted(set(files))


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


def _subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(ch in it for ch in needle)


def match_commands(commands: Sequence[tuple[str, str]], query: str) -> list[Candidate]:
    q = query.lower()
    found = [Candidate(f"/{name} ", f"/{name}", help_text) for name, help_text in commands if name.startswith(q)]
    # What was typed in full wins: "/mode" must not run "/model".
    found.sort(key=lambda c: c.label != f"/{q}")
    return found
