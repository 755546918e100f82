"""Path rule specifiers: gitignore-style globs, relative to the workspace or absolute.

``src/**`` and ``*.py`` are gitignore patterns relative to the workspace root (a pattern
without an inner slash matches at any depth; ``./name`` anchors it at the root).
``/abs/path/**``, ``~/notes/*.md`` and ``../sibling/**`` name places outside the
workspace; their literal leading folders are resolved like the paths they are matched
against, so a symlinked ``~`` or ``/tmp`` still matches.

Deny and ask rules also match case-insensitively and Unicode-normalised (see
:func:`fold`): on a case-insensitive file system (macOS, Windows, a case-folding
folder) ``.GIT/hooks/pre-commit`` *is* ``.git/hooks/pre-commit``, and matching loosely
can only make an answer stricter. Allow rules match exactly, so they never widen.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pathspec

_GLOB_CHARS = frozenset("*?[")
# Code points HFS+ ignores in file names (".g\u200cit" is ".git" there), as git's
# own check for them (is_hfs_dotgit) lists them.
_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


def fold(text: str) -> str:
    """``text`` as a case-insensitive, normalisation-insensitive file system compares
    names: canonical composition (NFC), ignorable code points dropped, case folded."""
    return _IGNORABLE.sub("", unicodedata.normalize("NFC", text)).casefold()


def validate_path_spec(spec: str) -> None:
    """Raise ValueError when ``spec`` cannot be a path rule (independent of a workspace)."""
    if not spec:
        raise ValueError("empty path pattern")
    if spec.startswith("!"):
        raise ValueError("negated patterns ('!') are not supported in rules; use a deny rule")
    if "\0" in spec or "\n" in spec:
        raise ValueError("path pattern contains a control character")
    parts = _expand_anchor(spec).split("/")
    first_glob = next((k for k, p in enumerate(parts) if _has_glob(p)), len(parts))
    if any(p == ".." for p in parts[first_glob:]):
        raise ValueError("'..' cannot follow a wildcard in a path pattern")
    if not _is_absolute_spec(spec) and ".." in parts:
        raise ValueError("'..' is only allowed at the start of a path pattern")
    try:
        compile_path_pattern(spec, Path("/"))
    except Exception as exc:  # pathspec raises several types for bad patterns
        raise ValueError(f"bad path pattern: {exc}") from None


def _is_absolute_spec(spec: str) -> bool:
    return spec.startswith(("/", "~")) or spec == ".." or spec.startswith("../")


def _expand_anchor(spec: str) -> str:
    return os.path.expanduser(spec) if spec.startswith("~") else spec


def _has_glob(part: str) -> bool:
    return any(ch in _GLOB_CHARS for ch in part)


def _relative_line(spec: str) -> str:
    # "./x" anchors at the root, which gitignore writes as "/x".
    if spec.startswith("./"):
        rest = spec[2:].lstrip("/")
        return "/" + rest if rest else "**"
    if spec == ".":
        return "**"
    return spec


def escape_glob(literal: str) -> str:
    """A gitignore pattern matching exactly the path ``literal``."""
    out = []
    for ch in literal:
        if ch in "\\*?[":
            out.append("\\")
        out.append(ch)
    text = "".join(out)
    if text.startswith(("!", "#")):
        text = "\\" + text
    if text.endswith(" "):
        text = text[:-1] + "\\ "
    return text


@dataclass(frozen=True)
class PathPattern:
    spec: str
    absolute: bool
    # Relative patterns with no inner slash (``*.pem``, ``.env``) match a base name at
    # any depth; only those also match outside the workspace when a deny or ask rule
    # is checked, so that `deny read(*.pem)` covers /etc/ssl/x.pem as well.
    basename_only: bool
    _spec: pathspec.GitIgnoreSpec
    _folded: pathspec.GitIgnoreSpec  # the same pattern, folded (see fold())
    # The absolute folder (or file) every path it matches lies in or is, as matched
    # (the pattern's words before its first wildcard); None when it may match anywhere
    # (``*.pem``, ``.env``, ``**/x``).
    literal: str | None = None

    def could_match_below(self, folder: Path, *, one_level: bool = False) -> bool:
        """Whether a path in ``folder`` (a resolved folder a command walks) could match:
        the folder lies in the pattern's literal folder, or, unless only its own
        entries are read (``one_level``), holds that folder. Compared folded, like a
        deny rule matches; a pattern that may match anywhere always could."""
        if self.literal is None:
            return not one_level
        walked, literal = fold(str(folder)).rstrip("/") + "/", fold(self.literal).rstrip("/") + "/"
        return walked.startswith(literal) or (not one_level and literal.startswith(walked))

    def matches(self, resolved: Path, root: Path, *, outside_too: bool,
                loose: bool = False) -> bool:
        """Whether the resolved path matches; ``loose`` also matches it folded (for deny
        and ask rules), ``outside_too`` lets a base-name pattern match outside the root."""
        if self.absolute:
            name = str(resolved).lstrip("/") or "."
        elif (rel := _below(str(resolved), str(root))) is not None:
            name = rel or "."
        elif outside_too and self.basename_only:
            name = str(resolved).lstrip("/")
        else:
            return False
        return self._spec.match_file(name) or (loose and self._folded.match_file(fold(name)))


def _below(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` ("" for the root itself), None when outside it; on the
    strings of two resolved paths, since a search checks every file it finds."""
    if path == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix):] if path.startswith(prefix) else None


def compile_path_pattern(spec: str, root: Path) -> PathPattern:
    """Compile a validated path spec for the workspace at ``root``."""
    if not _is_absolute_spec(spec):
        line = _relative_line(spec)
        inner = line.rstrip("/")
        basename_only = "/" not in inner
        lead = None if basename_only else _literal_lead(inner.lstrip("/"))
        literal = os.path.join(root, lead) if lead else None
        return PathPattern(spec, False, basename_only, _spec(line), _spec(fold(line)), literal)
    expanded = _expand_anchor(spec)
    if not os.path.isabs(expanded):
        expanded = os.path.join(root, expanded)
    parts = expanded.split("/")
    first_glob = next((k for k, p in enumerate(parts) if _has_glob(p)), len(parts))
    literal = "/".join(parts[:first_glob]) or "/"
    rest = "/".join(parts[first_glob:])
    real = os.path.realpath(literal).lstrip("/")
    escaped = escape_glob(real)
    line = "/" + "/".join(p for p in (escaped, rest) if p) if escaped or rest else "**"
    return PathPattern(spec, True, False, _spec(line), _spec(fold(line)), "/" + real)


def _literal_lead(line: str) -> str:
    """The words of a gitignore line before its first wildcard (or escape), joined."""
    lead: list[str] = []
    for part in line.split("/"):
        if _has_glob(part) or "\\" in part:
            break
        lead.append(part)
    return "/".join(lead)


def _spec(line: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([line])


def rule_path(resolved: Path, root: Path) -> str:
    """The specifier an "always allow" answer saves for exactly this path."""
    if resolved == root or root in resolved.parents:
        rel = resolved.relative_to(root).as_posix()
        if rel in ("", "."):
            return "./"
        # Always anchored with "./": every file's rule has the same shape, and a bare
        # name ("calc.py") would match that name at any depth.
        return "./" + escape_glob(rel)
    return escape_glob(str(resolved))
