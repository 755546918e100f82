"""Gitignore rules: parsing ignore files and deciding whether a path is ignored.

See :mod:`.walk` for the rules Loom follows (those of rg as Loom runs it). Gitignore
lines are matched against each entry's own path. pathspec's matcher also treats a path
as matched when one of its parent folders matches, which is right for checking a lone
path but wrong inside a walk that prunes folders and may start inside an ignored one
(``grep path=node_modules/x``), where it would disagree with rg. pathspec is used for
the user-supplied ``ls`` ignore list, where that meaning fits.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .globs import glob_to_regex


class IgnoreFile:
    """The lines of one ignore file, matched against paths relative to its folder."""

    def __init__(self, text: str) -> None:
        rules: list[tuple[str, bool, bool]] = []  # (regex, negated, dir_only)
        for raw in text.splitlines():
            parsed = _parse_ignore_line(raw)
            if parsed is not None:
                rules.append(parsed)
        # By regex group name: whether that line re-includes (a `!` line) what it matches.
        self.keeps = {f"r{i}": negated for i, (_, negated, _) in enumerate(rules)}
        # One alternation per file, last line first: the first alternative that
        # matches the whole path is the last matching line, which is the one git
        # honours. Folders see every rule; files only those without a trailing '/'.
        self.for_dirs = _alternation([(i, rx) for i, (rx, _, _) in enumerate(rules)])
        self.for_files = _alternation([(i, rx) for i, (rx, _, d) in enumerate(rules) if not d])

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a ``!`` line; None: no line matches."""
        rx = self.for_dirs if is_dir else self.for_files
        if rx is None:
            return None
        m = rx.fullmatch(rel)
        if m is None or m.lastgroup is None:
            return None
        return not self.keeps[m.lastgroup]


def _parse_ignore_line(raw: str) -> tuple[str, bool, bool] | None:
    line = raw.rstrip("\r")
    if not line or line.startswith("#"):
        return None
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    if not line:
        return None
    if not anchored:
        line = "**/" + line
    return glob_to_regex(line, braces=False), negated, dir_only


def _alternation(rules: list[tuple[int, str]]) -> re.Pattern[str] | None:
    if not rules:
        return None
    return re.compile("|".join(f"(?P<r{i}>{rx})" for i, rx in reversed(rules)), re.DOTALL)


@dataclass(frozen=True)
class Level:
    rules: IgnoreFile
    strip: int  # characters of the walk-relative path to drop...
    prefix: str  # ...and what to put before it, to get the path relative to the file's folder
    # rg 14.1.0 matches the rules of ignore files above the searched folder against
    # "<searched folder>/<entry name>", dropping the folders in between, so a parent's
    # `docs/*.md` hides docs/sub/b.md when docs is searched (but not when the root is).
    # Mirrored so that both engines list the same files; only rules with a '/' inside
    # are affected, and only below the first level of a searched subfolder.
    name_only: bool = False

    def match(self, rel: str, is_dir: bool) -> bool | None:
        if self.name_only:
            return self.rules.match(self.prefix + rel.rpartition("/")[2], is_dir)
        return self.rules.match(self.prefix + rel[self.strip:], is_dir)


def read_ignore_file(path: str) -> IgnoreFile | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    rules = IgnoreFile(text)
    return rules if rules.keeps else None


def ancestor_levels(root: str) -> tuple[tuple[Level, ...], bool]:
    """Ignore files above ``root`` that apply inside it, and whether git rules apply."""
    folders: list[str] = []
    current = os.path.dirname(root)
    git_root: str | None = None
    while True:
        folders.append(current)
        if os.path.exists(os.path.join(current, ".git")):
            git_root = current
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if git_root is None:
        return (), False
    levels: list[Level] = []
    for folder in folders:  # nearest first
        rules = read_ignore_file(os.path.join(folder, ".gitignore"))
        if rules is not None:
            prefix = os.path.relpath(root, folder).replace(os.sep, "/") + "/"
            levels.append(Level(rules, 0, prefix, name_only=True))
    return tuple(levels), True


class IgnoreChecker:
    """Answers, for paths below ``root``, whether :func:`.walk.walk` would reach them.

    For results rg found with a ``--glob`` (which bypasses ignore rules): checking a few
    thousand paths costs less than rg spends applying ignore rules to a whole tree.
    """

    def __init__(self, root: Path | str) -> None:
        self._root = os.fspath(root)
        levels, git_active = ancestor_levels(self._root)
        self._folders: dict[str, tuple[tuple[Level, ...], bool]] = {}
        self._folders[""] = self._enter(self._root, "", levels, git_active)
        self._visible_folders: dict[str, bool] = {"": True}

    def _enter(self, folder: str, folder_rel: str, levels: tuple[Level, ...],
               git_active: bool) -> tuple[tuple[Level, ...], bool]:
        # os.access answers without raising, unlike a failed stat or open: this runs
        # for every folder holding a result.
        if os.access(folder + "/.git", os.F_OK):
            levels, git_active = (), True
        gitignore = folder + "/.gitignore"
        if git_active and os.access(gitignore, os.F_OK):
            rules = read_ignore_file(gitignore)
            if rules is not None:
                strip = len(folder_rel) + 1 if folder_rel else 0
                levels = (Level(rules, strip, ""), *levels)
        return levels, git_active

    def _rules_inside(self, folder_rel: str) -> tuple[tuple[Level, ...], bool]:
        known = self._folders.get(folder_rel)
        if known is None:
            parent = folder_rel.rpartition("/")[0]
            levels, git_active = self._rules_inside(parent)
            known = self._enter(os.path.join(self._root, folder_rel), folder_rel, levels, git_active)
            self._folders[folder_rel] = known
        return known

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        levels, _ = self._rules_inside(rel.rpartition("/")[0])
        for level in levels:
            verdict = level.match(rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def _folder_visible(self, folder_rel: str) -> bool:
        known = self._visible_folders.get(folder_rel)
        if known is None:
            parent, _, name = folder_rel.rpartition("/")
            known = (name != ".git" and self._folder_visible(parent)
                     and not self._ignored(folder_rel, True))
            self._visible_folders[folder_rel] = known
        return known

    def visible(self, rel: str) -> bool:
        """Whether the file at ``rel`` (relative to root, '/'-separated) would be walked."""
        return self.visible_many([rel])[0]

    def visible_many(self, rels: list[str]) -> list[bool]:
        """:meth:`visible` for each path; quickest when paths of a folder are adjacent
        (sorted), since a folder's rules are looked up once per run of its files."""
        # This runs on every result of a search, so Level.match is unrolled here:
        # per folder, the file rules that apply, as (regex, keeps, prefix, strip),
        # strip -1 meaning "match the file name only".
        verdicts: list[bool] = []
        last_folder: str | None = None
        folder_ok = False
        checks: list[tuple[re.Pattern[str], dict[str, bool], str, int]] = []
        for rel in rels:
            folder, _, name = rel.rpartition("/")
            if folder != last_folder:
                last_folder = folder
                folder_ok = self._folder_visible(folder)
                checks = []
                if folder_ok:
                    for level in self._rules_inside(folder)[0]:
                        if level.rules.for_files is not None:
                            checks.append((level.rules.for_files, level.rules.keeps, level.prefix,
                                           -1 if level.name_only else level.strip))
            verdict = folder_ok and name != ".git"
            if verdict:
                for rx, keeps, prefix, strip in checks:
                    m = rx.fullmatch(prefix + (name if strip < 0 else rel[strip:]))
                    if m is not None and m.lastgroup is not None:
                        verdict = keeps[m.lastgroup]
                        break
            verdicts.append(verdict)
        return verdicts
