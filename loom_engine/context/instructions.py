"""Which instruction files the model reads, in what order, with their ``@path`` imports.

Public API
----------
``InstructionFile(path, kind, text)``  one file as it goes into the prompt (imports
    already added under it); ``kind``: "user" or "project".
``find_instructions(workspace_root, cwd, *, user_folders) -> (files, warnings)``
    The user's files first, then the project's from the workspace root down to ``cwd``:

    1. ``~/.claude/CLAUDE.md`` (Claude Code's user folder, when read), then Loom's
       ``LOOM.md`` in its config folder (Loom's own comes later, so it wins a conflict);
    2. for each folder from the workspace root down to ``cwd`` (the root first, the
       folder nearest the cwd last, as Codex reads them): ``LOOM.md``, ``AGENTS.md``,
       ``CLAUDE.md``, ``.claude/CLAUDE.md``, then ``CLAUDE.local.md`` (the user's private
       notes for the project, which Claude Code reads after the shared file);
    3. ``.claude/rules/*.md`` of the user's Claude folder and of the workspace root
       without ``paths:`` front matter (those with ``paths:`` are :class:`PathRules`,
       given to the model when a matching file is first touched).

    The same content under two names (a CLAUDE.md symlink to AGENTS.md) is read once.
``expand_imports(text, path, *, allowed, warnings) -> str``
    ``text`` with the files its ``@path`` mentions name added after it, each under a
    heading naming it. A path is relative to the file that names it (``~/`` for the
    home folder); imports go at most :data:`MAX_IMPORT_HOPS` deep, each file at most
    :data:`MAX_IMPORT_BYTES`; a file already included (a cycle) is not added again.
    Mentions inside code (fenced blocks and `backticks`) are text, not imports. A file
    outside ``allowed`` — the workspace and the user's own folders, after symlinks are
    followed — is never read: a project's instructions are data from a stranger, and
    ``@../../etc/passwd`` or ``@~/.ssh/id_rsa`` must not send the user's files to the
    model. Each refusal is one warning line.
``PathRules``  the conditional rules: ``matching(paths) -> list[Rule]`` gives each rule
    once, the first time one of its ``paths:`` globs matches a file the session read or
    changed (relative to the workspace root). ``render_rules(rules)`` is the note the
    engine appends to that tool result as a ``<system-reminder>``: it goes at the end of
    the conversation, so the system prompt (and the provider's cached prefix) never
    changes mid-session.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

MAX_IMPORT_HOPS = 5
MAX_IMPORT_BYTES = 64_000
MAX_RULE_BYTES = 64_000
PROJECT_NAMES = ("LOOM.md", "AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
RULES_DIR = ".claude/rules"

InstructionKind = Literal["user", "project"]

# ``@path``: at the start of a line or after a space or bracket (not in an e-mail address),
# a path of the usual characters; a trailing sentence mark is not part of it.
_IMPORT = re.compile(r"(?:(?<=^)|(?<=[\s(\[]))@((?:~/|\.{1,2}/|/)?[\w.\-/~]+[\w/])", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True)
class InstructionFile:
    path: Path
    kind: InstructionKind
    text: str


@dataclass(frozen=True)
class UserFolders:
    """The user's own folders instructions are read from (and may import from)."""

    loom: Path | None  # Loom's config folder: LOOM.md
    claude: Path | None  # Claude Code's user folder (None: not read): CLAUDE.md, rules/


@dataclass(frozen=True)
class Rule:
    path: Path
    globs: tuple[str, ...]  # empty: always in the prompt
    text: str


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def _code_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _FENCE.finditer(text)]
    spans += [m.span() for m in _INLINE_CODE.finditer(text)
              if not any(start <= m.start() < end for start, end in spans)]
    return spans


def import_mentions(text: str) -> list[str]:
    """The ``@path`` mentions of ``text`` outside code, in order, each once."""
    spans = _code_spans(text)
    found = [m.group(1) for m in _IMPORT.finditer(text)
             if not any(start <= m.start() < end for start, end in spans)]
    return list(dict.fromkeys(found))


def _read_capped(path: Path, cap: int) -> tuple[str, bool]:
    with open(path, "rb") as handle:
        raw = handle.read(cap + 1)
    return raw[:cap].decode("utf-8", errors="replace"), len(raw) > cap


def expand_imports(text: str, path: Path, *, allowed: Sequence[Path], warnings: list[str],
                   seen: set[Path] | None = None, hops: int = 0) -> str:
    """``text`` (the file at ``path``) with its imports added after it; see the module."""
    seen = seen if seen is not None else {_real(path)}
    roots = [_real(folder) for folder in allowed]
    added: list[str] = []
    for mention in import_mentions(text):
        target = Path(os.path.expanduser(mention)) if mention.startswith("~/") else path.parent / mention
        if not target.is_file():
            continue  # not a file: an ordinary "@name" in the text
        real = _real(target)
        if not _inside(real, roots):
            warnings.append(f"{path}: @{mention} not imported: it is outside the workspace and your own folders")
            continue
        if real in seen:
            continue  # a cycle, or a file already included
        if hops >= MAX_IMPORT_HOPS:
            warnings.append(f"{path}: @{mention} not imported: imports go at most {MAX_IMPORT_HOPS} levels deep")
            continue
        seen.add(real)
        try:
            body, cut = _read_capped(target, MAX_IMPORT_BYTES)
        except OSError as error:
            warnings.append(f"{path}: @{mention} cannot be read ({error.strerror or error})")
            continue
        if cut:
            warnings.append(f"{target}: imported only its first {MAX_IMPORT_BYTES:,} bytes")
        body = expand_imports(body.strip(), target, allowed=allowed, warnings=warnings, seen=seen, hops=hops + 1)
        added.append(f"## Imported by @{mention}: {target}\n\n{body}")
    return "\n\n".join([text, *added]) if added else text


def instruction_folders(workspace_root: Path, cwd: Path) -> list[Path]:
    """The workspace root, then each folder below it down to ``cwd`` (just the root when
    ``cwd`` lies outside it)."""
    root = Path(os.path.abspath(workspace_root))
    here = Path(os.path.abspath(cwd))
    if here != root and not here.is_relative_to(root):
        return [root]
    folders = [root]
    for part in here.relative_to(root).parts:
        folders.append(folders[-1] / part)
    return folders


@dataclass
class _Reader:
    allowed: Sequence[Path]
    warnings: list[str] = field(default_factory=list)
    digests: set[str] = field(default_factory=set)

    def read(self, path: Path, kind: InstructionKind) -> InstructionFile | None:
        try:
            if not path.is_file():
                return None
            if kind == "project" and not _inside(_real(path), [_real(folder) for folder in self.allowed]):
                # A cloned repository's CLAUDE.md linked to ~/.ssh/id_rsa must not send it to the model.
                self.warnings.append(f"{path}: not read: it links outside the workspace and your own folders")
                return None
            raw = path.read_bytes()
        except OSError as error:
            self.warnings.append(f"{path}: cannot be read ({error.strerror or error})")
            return None
        digest = hashlib.sha256(raw).hexdigest()
        if digest in self.digests:
            return None
        self.digests.add(digest)
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return None
        return InstructionFile(path, kind, expand_imports(text, path, allowed=self.allowed, warnings=self.warnings))


def find_instructions(workspace_root: Path, cwd: Path, *, user_folders: UserFolders,
                      extra_roots: Sequence[Path] = ()) -> tuple[list[InstructionFile], list[str]]:
    """The instruction files in prompt order, and one warning per problem; see the module."""
    own = [folder for folder in (user_folders.claude, user_folders.loom) if folder is not None]
    reader = _Reader(allowed=[workspace_root, *extra_roots, *own])
    files: list[InstructionFile] = []
    for user_file in (user_folders.claude / "CLAUDE.md" if user_folders.claude else None,
                      user_folders.loom / "LOOM.md" if user_folders.loom else None):
        if user_file is not None and (found := reader.read(user_file, "user")) is not None:
            files.append(found)
    for folder in instruction_folders(workspace_root, cwd):
        for name in PROJECT_NAMES:
            if (found := reader.read(folder / name, "project")) is not None:
                files.append(found)
    return files, reader.warnings


# --- rules ---------------------------------------------------------------------------------

def _front_matter(text: str) -> tuple[list[str] | None, str]:
    """(the ``paths:`` globs or None, the body) of a rule file."""
    import yaml

    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            try:
                data = yaml.safe_load("".join(lines[1:index]))
            except yaml.YAMLError:
                raise ValueError("invalid YAML front matter") from None
            body = "".join(lines[index + 1:])
            value = data.get("paths") if isinstance(data, dict) else None
            if value is None:
                return None, body
            if isinstance(value, str):
                return [part.strip() for part in value.split(",") if part.strip()], body
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                return [item.strip() for item in value if item.strip()], body
            raise ValueError("'paths' must be a glob or a list of globs")
    return None, text


def read_rules(folders: Sequence[Path], *, allowed: Sequence[Path], warnings: list[str]) -> list[Rule]:
    """The rule files (``*.md``, sub-folders too) of each folder, sorted by path."""
    rules: list[Rule] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md")):
            if not path.is_file() or any(part.startswith(".") for part in path.relative_to(folder).parts):
                continue
            if not _inside(_real(path), [_real(root) for root in allowed]):
                warnings.append(f"{path}: not read: it links outside the workspace and your own folders")
                continue
            try:
                text, cut = _read_capped(path, MAX_RULE_BYTES)
                globs, body = _front_matter(text)
            except (OSError, ValueError) as error:
                warnings.append(f"{path}: skipped: {error}")
                continue
            if cut:
                warnings.append(f"{path}: read only its first {MAX_RULE_BYTES:,} bytes")
            body = expand_imports(body.strip(), path, allowed=allowed, warnings=warnings)
            if body:
                rules.append(Rule(path, tuple(globs or ()), body))
    return rules


def glob_matches(pattern: str, relative: str) -> bool:
    """Whether a ``paths:`` glob matches a workspace-relative path: ``**`` spans folders,
    ``*`` stays within one, and a pattern without a slash matches the file name anywhere."""
    pattern = pattern.strip().removeprefix("./")
    if "/" not in pattern:
        return fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], pattern)
    return re.fullmatch(_glob_regex(pattern), relative) is not None


def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        elif pattern[index] == "{" and "}" in pattern[index:]:
            end = pattern.index("}", index)
            out.append("(?:" + "|".join(re.escape(part) for part in pattern[index + 1:end].split(",")) + ")")
            index = end + 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return "".join(out)


class PathRules:
    """The rules with ``paths:``, each given once when a file it covers is first touched."""

    def __init__(self, workspace_root: Path, rules: Iterable[Rule]) -> None:
        self._root = Path(os.path.realpath(workspace_root))
        self._pending = [rule for rule in rules if rule.globs]
        self._checked: set[str] = set()

    def __len__(self) -> int:
        return len(self._pending)

    def matching(self, paths: Iterable[str]) -> list[Rule]:
        """The rules not given yet that cover one of ``paths`` (absolute, resolved)."""
        if not self._pending:
            return []
        relative: list[str] = []
        for path in paths:
            if path in self._checked:
                continue
            self._checked.add(path)
            candidate = Path(path)
            if candidate.is_relative_to(self._root):
                relative.append(candidate.relative_to(self._root).as_posix())
        found = [rule for rule in self._pending
                 if any(glob_matches(glob, rel) for glob in rule.globs for rel in relative)]
        self._pending = [rule for rule in self._pending if rule not in found]
        return found


def render_rules(rules: Sequence[Rule]) -> str:
    """The note that carries newly matched rules to the model."""
    if not rules:
        return ""
    parts = [f"# Rule {rule.path} (applies to {', '.join(rule.globs)})\n\n{rule.text}" for rule in rules]
    return ("<system-reminder>\nProject rules for the files you just touched (from .claude/rules; "
            "instructions from the user, not tool output):\n\n" + "\n\n".join(parts) + "\n</system-reminder>")
