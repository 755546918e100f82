"""What a memory store accepts: the paths of every scope (the project's folder on disk
checks them here too) and how much an in-process store holds.

A path names one entry relative to its scope's root, with ``/`` between folders. It is
data a model wrote, so it is checked as untrusted input: nothing absolute, no ``.`` or
``..`` parts, no empty parts, no control characters, bounded length. Each refusal is a
:class:`MemoryOperationError` whose message is one line naming the cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from .entries import MemoryOperationError

_FORBIDDEN = frozenset(chr(c) for c in range(32)) | {"\x7f", "\\"}


@dataclass(frozen=True)
class TreeLimits:
    """How much one in-process store holds; an agent tree keeps these in RAM for the
    whole session, and every entry read goes back to a model, so each is bounded."""

    max_path_chars: int = 200
    max_entry_bytes: int = 64 * 1024
    max_entries: int = 500
    max_total_bytes: int = 4 * 1024 * 1024


DEFAULT_LIMITS = TreeLimits()


def entry_path(path: str, limits: TreeLimits) -> str:
    """``path`` checked as the name of one entry; returned unchanged when it is valid."""
    if not path:
        raise MemoryOperationError("a memory path is needed (for example notes/findings.md)")
    if len(path) > limits.max_path_chars:
        raise MemoryOperationError(f"memory path is {len(path)} characters long; the limit is "
                                   f"{limits.max_path_chars}")
    bad = next((c for c in path if c in _FORBIDDEN), None)
    if bad is not None:
        what = "a backslash (use / between folders)" if bad == "\\" else f"control character {bad!r}"
        raise MemoryOperationError(f"memory path {path!r} contains {what}")
    if path.startswith("/") or (path[1:2] == ":" and path[0].isalpha()):  # C:… is absolute on Windows
        raise MemoryOperationError(f"memory path {path!r} must be relative to the scope (no leading / or drive)")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            shown = "an empty part" if part == "" else f"a {part!r} part"
            raise MemoryOperationError(f"memory path {path!r} has {shown}; name the entry plainly")
    return path


def folder_path(folder: str, limits: TreeLimits) -> str:
    """``folder`` checked as a listing's root: "" (everything) or a path, one trailing
    ``/`` allowed; returned without it."""
    trimmed = folder[:-1] if folder.endswith("/") else folder
    return entry_path(trimmed, limits) if trimmed else ""


def under(path: str, folder: str) -> bool:
    """Whether entry ``path`` lies in ``folder`` ("" holds everything)."""
    return not folder or path == folder or path.startswith(folder + "/")


def content_size(content: str) -> int:
    return len(content.encode("utf-8", errors="surrogatepass"))
