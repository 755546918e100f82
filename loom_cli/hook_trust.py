"""What trusting a project hook covers: its entry, and the workspace files the entry runs.

A hook entry usually names a script in the repository (``"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh``,
``python3 .claude/hooks/fmt.py``, ``./scripts/lint.sh``). Trusting only the entry would let a
``git pull`` change the script and run it without a new question, so the trust key of a project
hook is a hash of the entry's hash and, for each workspace file the entry refers to, the file's
path (relative to the workspace root) and the sha256 of its content.

The files an entry refers to are found word by word: ``command`` is split with shell rules
(``;``, ``&&``, ``|`` separate words too; a word with spaces in it, such as ``bash -c '...'``'s
script, is split again), ``args`` are words as they are, and ``$CLAUDE_PROJECT_DIR``,
``$LOOM_PROJECT_DIR`` and ``$PWD`` (with or without braces) stand for the workspace root. A
word counts when, resolved against the workspace root (hooks run there) with symlinks
followed, it is an existing regular file inside the workspace. Only whole words count
(``--config=path`` does not), and a word after an output redirection (``> log``) does not:
the hook writes that file. A command that cannot be split refers to nothing more than its
entry. A referenced file that cannot be read leaves the hook without a key: it cannot be
trusted (fail closed).

An entry that refers to no workspace file keeps its entry hash as its key, so what was trusted
before scripts were covered still holds for it; an entry that runs a script is asked about again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from loom_engine.hooks.config import HookCommand

# The workspace root, as a hook's command can name it ($PWD too: hooks run there).
_ROOT_NAME = r"(?:CLAUDE_PROJECT_DIR|LOOM_PROJECT_DIR|PWD)"
_ROOT_VARIABLE = re.compile(rf"\$(?:\{{{_ROOT_NAME}\}}|{_ROOT_NAME}(?![A-Za-z0-9_]))")
_OPERATOR = re.compile(r"[;&|()<>]+")
_MAX_DEPTH = 3  # words inside words (bash -c "..."): deep enough for real hooks, bounded


@dataclass(frozen=True)
class HookTrust:
    """The trust key of one project hook, and the workspace files it covers."""

    key: str | None  # None: a referenced file cannot be read, so the hook cannot be trusted
    files: tuple[str, ...] = ()  # relative to the workspace root, in the order the entry names them
    unreadable: tuple[str, ...] = ()  # among ``files``
    digests: tuple[tuple[str, str], ...] = ()  # (file, sha256) of each file, as read now

    def pinned(self, hook: HookCommand, workspace_root: Path) -> HookCommand:
        """``hook`` carrying the content it was trusted with, checked again before each run."""
        root = Path(os.path.realpath(workspace_root))
        return replace(hook, pinned=tuple((str(root / name), digest) for name, digest in self.digests))


def hook_trust(hook: HookCommand, workspace_root: Path) -> HookTrust:
    """The key to record and compare for ``hook`` in this workspace, with the files it covers."""
    root = Path(os.path.realpath(workspace_root))
    files = referenced_files(hook, root)
    if not files:
        return HookTrust(hook.entry_hash)
    digests: list[tuple[str, str]] = []
    unreadable: list[str] = []
    for name in files:
        digest = _digest(root / name)
        if digest is None:
            unreadable.append(name)
        else:
            digests.append((name, digest))
    if unreadable:
        return HookTrust(None, files, tuple(unreadable))
    canonical = json.dumps([hook.entry_hash, digests], separators=(",", ":"))
    return HookTrust(hashlib.sha256(canonical.encode("utf-8")).hexdigest(), files, digests=tuple(digests))


def referenced_files(hook: HookCommand, workspace_root: Path) -> tuple[str, ...]:
    """The workspace files (relative paths, each once) that ``hook``'s words name."""
    root = Path(os.path.realpath(workspace_root))
    found: dict[str, None] = {}
    for word in (*_command_words(hook.command, 0), *hook.args):
        name = _workspace_file(_expand(word, root), root)
        if name is not None:
            found[name] = None
    return tuple(found)


def _command_words(command: str, depth: int) -> Iterator[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes: nothing more than the entry itself
        return
    writes = False
    for word in words:
        if _OPERATOR.fullmatch(word):
            writes = ">" in word  # the next word is a file the hook writes, not one it runs
            continue
        if writes:
            writes = False
            continue
        yield word
        if depth < _MAX_DEPTH and any(char.isspace() for char in word):
            yield from _command_words(word, depth + 1)


def _expand(word: str, root: Path) -> str:
    return _ROOT_VARIABLE.sub(lambda _: str(root), word)


def _workspace_file(word: str, root: Path) -> str | None:
    if not word.strip():
        return None
    try:
        real = Path(os.path.realpath(root / word))  # an absolute word replaces the root
        if real == root or not real.is_relative_to(root) or not real.is_file():
            return None
    except (OSError, ValueError):  # a NUL byte, a path too long: not a file
        return None
    return real.relative_to(root).as_posix()


def _digest(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None
