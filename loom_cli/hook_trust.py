"""What trusting a project hook covers: its entry, and the folders its code lives in.

A hook entry usually runs a script of the repository (``"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh``,
``python3 .claude/hooks/fmt.py``, ``./scripts/lint.sh``). Trusting only the entry would let a
``git pull`` change the script and run it without a new question; trusting only the files the
entry names would let it change what the script sources, imports or runs beside it (``lib.sh``,
a module, a Makefile, every ``*.sh`` of a folder). So the trust of a project hook covers folders,
each pinned by a digest of everything in it (see :mod:`loom_engine.hooks.pins`):

* the ``hooks/`` folder beside the settings file that declares it (``.claude/hooks/`` for
  ``.claude/settings*.json``, ``.loom/hooks/`` for ``.loom/settings*.toml``), where hook scripts
  live by convention — covered whether or not the command names it;
* the folder of every workspace file the command names, and of every workspace link to a file it
  names (what the link leads to, in the workspace or not, is part of that folder's digest); for a
  file at the top of the workspace, the entries directly in the top folder (the workspace itself
  cannot be pinned whole);
* every workspace folder the command runs things from: one it goes to (``cd dir && ./x``,
  ``make -C dir``), the fixed part of a glob (``.claude/hooks/checks/*.sh``:
  ``.claude/hooks/checks/``), a module's package (``python3 -m tools.guard``: ``tools/``). A
  folder named as an operand (``pytest tests``) is data the hook reads, not its code.

Each covered folder is taken whole, at any depth. The trust key of a project hook is a hash of
the entry's hash and each folder's path and digest; any change there makes the hook untrusted
again (asked at the next start, skipped headless), and the runner checks the digests before each
run (a change in the session: not run).

The words of an entry are found with shell rules (``;``, ``&&``, ``|`` separate words too; a word
with spaces in it, such as ``bash -c '...'``'s script, is split again); ``args`` are words as
they are. ``$CLAUDE_PROJECT_DIR``, ``$LOOM_PROJECT_DIR`` and ``$PWD`` stand for the workspace root
(bare, braced, or with a default: ``${CLAUDE_PROJECT_DIR:-.}``), a variable the entry assigns
stands for its value (``H=.claude/hooks/x.sh; sh "$H"``), and the value after a ``=`` counts as a
word of its own (``--config=path``). A word resolved against the workspace root (hooks run there)
or a folder the command went to, symlinks followed, counts when it is inside the workspace. A word
after an output redirection (``> log``) does not: the hook writes that file.

A covered folder that cannot be pinned (too big to read at each run, something in it unreadable)
leaves the hook without a key: it cannot be trusted (fail closed). A hook with nothing to cover
keeps its entry hash as its key, as before scripts were covered.

The covered folders are also the places the model's file tools may not change unasked
(:attr:`HookTrust.guarded`, passed to the permission manager as a protected-path layer), and
what a sandbox binds read-only.
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
from loom_engine.hooks.pins import ABSENT, MAX_BYTES, MAX_FILES, Pin, folder_state

# The workspace root, as a hook's command can name it ($PWD too: hooks run there).
_ROOT_NAME = r"(?:CLAUDE_PROJECT_DIR|LOOM_PROJECT_DIR|PWD)"
_ROOT_VARIABLE = re.compile(r"\$(?:\{" + _ROOT_NAME + r"(?::?[-=?+][^}]*)?\}|" + _ROOT_NAME + r"(?![A-Za-z0-9_]))")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_GLOB = re.compile(r"[*?\[]")
_OPERATOR = re.compile(r"[;&|()<>]+")
# The word after one of these is a folder the command goes to and runs things from.
_CHANGES_FOLDER = frozenset({"cd", "pushd", "-C", "--directory"})
_MAX_DEPTH = 3  # words inside words (bash -c "..."): deep enough for real hooks, bounded
TOP = ""  # the workspace's own folder, as a covered folder's relative path


@dataclass(frozen=True)
class HookTrust:
    """The trust key of one project hook, and what it covers."""

    key: str | None  # None: a covered folder cannot be pinned, so the hook cannot be trusted
    files: tuple[str, ...] = ()  # the workspace files the entry names (relative), in its order
    unreadable: tuple[str, ...] = ()  # what could not be read (relative to the workspace root)
    # The folders covered (relative; TOP is the workspace's own, for its entries only), and
    # whether each is taken whole.
    covers: tuple[tuple[str, bool], ...] = ()
    too_big: tuple[str, ...] = ()  # covered folders over the pins' caps
    pins: tuple[Pin, ...] = ()  # each covered folder's digest, as read now
    guarded: tuple[str, ...] = ()  # absolute paths the model's file tools must ask to change
    remembers: tuple[str, ...] = ()  # the covered folders that exist, as the user reads them

    def pinned(self, hook: HookCommand) -> HookCommand:
        """``hook`` carrying the folders it was trusted with, checked again before each run."""
        return replace(hook, pinned=self.pins)


def describe_cover(folder: str, whole: bool) -> str:
    """A covered folder as the user reads it."""
    return f"everything in {folder}/" if whole else "the files at the top of the workspace"


def too_big_line(folder: str) -> str:
    """Why a covered folder cannot be pinned, in words (the question and `/hooks` show it)."""
    shown = f"{folder}/" if folder != TOP else "the top of the workspace"
    return (f"{shown} holds more than {MAX_FILES} files or {MAX_BYTES // (1024 * 1024)} MiB: too much to "
            "remember, so this hook stays off")


def hook_trust(hook: HookCommand, workspace_root: Path) -> HookTrust:
    """The key to record and compare for ``hook`` in this workspace, with what it covers."""
    root = Path(os.path.realpath(workspace_root))
    files, links, folders = _named(hook, root)
    covers = _covers(hook, (*files, *links), folders)
    pins: list[Pin] = []
    unreadable: list[str] = []
    too_big: list[str] = []
    remembers: list[str] = []
    for folder, whole in covers:
        state = folder_state(root / folder, whole=whole)
        if state.unreadable is not None:
            unreadable.append(_join(folder, state.unreadable))
        elif state.too_big:
            too_big.append(folder)
        else:
            assert state.digest is not None
            pins.append(Pin(str(root / folder), whole, state.digest))
            if state.digest != ABSENT:
                remembers.append(describe_cover(folder, whole))
    guarded = tuple(dict.fromkeys(str(root / folder) for folder, whole in covers if whole)) + tuple(
        str(root / name) for name in (*files, *links) if "/" not in name)  # a file at the top: itself only
    found = HookTrust(None, files, tuple(unreadable), covers, tuple(too_big), tuple(pins), guarded,
                      tuple(remembers))
    if unreadable or too_big:
        return found
    if all(pin.digest == ABSENT for pin in pins):
        return replace(found, key=hook.entry_hash)
    canonical = json.dumps([hook.entry_hash, [[folder, whole, pin.digest] for (folder, whole), pin
                                              in zip(covers, pins, strict=True)]], separators=(",", ":"))
    return replace(found, key=hashlib.sha256(canonical.encode("utf-8", "surrogateescape")).hexdigest())


def _join(folder: str, inside: str) -> str:
    parts = [part for part in (folder, inside) if part not in (TOP, ".")]
    return "/".join(parts) or "."


def _covers(hook: HookCommand, files: tuple[str, ...], folders: tuple[str, ...]) -> tuple[tuple[str, bool], ...]:
    """The folders the trust of ``hook`` covers (see the module doc), each once, none inside
    another: ``files``' folders, ``folders``, and the hooks folder beside its settings file."""
    wanted: dict[str, None] = {}
    if hook.in_project:  # its source is the settings file's path from the root
        wanted[Path(hook.source).parent.joinpath("hooks").as_posix()] = None
    for name in files:
        wanted[Path(name).parent.as_posix() if "/" in name else TOP] = None
    for name in folders:
        wanted[name] = None
    whole = [name for name in wanted if name != TOP]
    kept = [name for name in whole if not any(name.startswith(other + "/") for other in whole)]
    return tuple((name, True) for name in kept) + (((TOP, False),) if TOP in wanted else ())


def _named(hook: HookCommand, root: Path) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(workspace files, the workspace links they were named through, workspace folders) the
    words of ``hook`` name, relative, each once.

    A folder counts where the hook runs things from it (``cd``/``pushd`` to it, ``-C`` or
    ``--directory`` it, the fixed part of a glob, a module's package); a folder named as an
    operand (``pytest tests``) is data the hook reads, not its code."""
    files: dict[str, None] = {}
    links: dict[str, None] = {}
    folders: dict[str, None] = {}
    variables: dict[str, str] = {}
    bases = [root]  # where a relative word may point: the root, and every folder cd'ed to
    previous = ""
    for raw in (*_command_words(hook.command, 0), *hook.args):
        word = _expand(raw, root, variables)
        assignment = _ASSIGNMENT.fullmatch(word)
        if assignment is not None:
            variables[assignment.group(1)] = assignment.group(2)
        goes_to = previous in _CHANGES_FOLDER or word.startswith("--directory=")
        gone_to: list[Path] = []
        for candidate, from_folder in _candidates(word, root):
            for base in bases:
                kind, name, link = _workspace_path(candidate, base, root)
                if link is not None:
                    links[link] = None
                if kind == "file":
                    files[name] = None
                elif kind == "folder" and (from_folder or goes_to):
                    if name != TOP or from_folder == "glob":  # `cd "$CLAUDE_PROJECT_DIR"` covers nothing
                        folders[name] = None
                    if goes_to:
                        gone_to.append(root / name)
        bases += [folder for folder in gone_to if folder not in bases]
        previous = word
    return tuple(files), tuple(links), tuple(folders)


def _candidates(word: str, root: Path) -> Iterator[tuple[str, str]]:
    """The paths a word may name, each with what makes it a folder the hook runs code from
    ("": nothing by itself): the word, what follows its ``=``, the fixed part of a glob
    ("glob"), a dotted module's top package ("module")."""
    for text in (word, word.partition("=")[2]):
        if not text:
            continue
        if _GLOB.search(text):
            parts = text.split("/")
            fixed = next(index for index, part in enumerate(parts) if _GLOB.search(part))
            yield "/".join(parts[:fixed]) or ("/" if text.startswith("/") else "."), "glob"
        else:
            yield text, ""
    if _MODULE.fullmatch(word):
        path = word.replace(".", "/")
        if (root / f"{path}.py").is_file() or (root / path).is_dir():
            yield word.split(".")[0], "module"


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
        if depth < _MAX_DEPTH and any(char.isspace() or char in ";&|" for char in word):
            yield from _command_words(word, depth + 1)


def _expand(word: str, root: Path, variables: dict[str, str]) -> str:
    word = _ROOT_VARIABLE.sub(lambda _: str(root), word)

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return variables.get(name, match.group(0))

    return _VARIABLE.sub(value, word) if variables else word


def _workspace_path(word: str, base: Path, root: Path) -> tuple[str | None, str, str | None]:
    """("file" | "folder" | None, the path relative to the root (TOP for the root itself),
    the workspace link it was reached through or None), for ``word`` read in the folder ``base``."""
    if not word.strip():
        return None, "", None
    try:
        named = Path(os.path.abspath(base / word))  # an absolute word replaces the base
        real = Path(os.path.realpath(named))
        kind = "file" if real.is_file() else "folder" if real.is_dir() else None
    except (OSError, ValueError):  # a NUL byte, a path too long: not a path
        return None, "", None
    # A workspace link to a file, wherever it leads: retargeting it changes what runs.
    link = named.relative_to(root).as_posix() if (
        kind == "file" and named != real and named.is_relative_to(root)) else None
    if not real.is_relative_to(root):
        return None, "", link
    return kind, (TOP if real == root else real.relative_to(root).as_posix()), link
