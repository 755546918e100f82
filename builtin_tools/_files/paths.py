"""Path arguments as the file tools take them: checked for sense, resolved once per call.

A path the model writes is resolved the first time the call needs it (usually by the
permission check) and the same resolution is reused by the preview and the run, so a
symlink changed in between cannot send the run somewhere the check never saw. The
writes and reads themselves then refuse to follow any symlink (see ``safe_io``).
"""

from __future__ import annotations

import os
from pathlib import Path

from loom_engine.tools.base import ToolContext, ToolError

from . import limits

# Keys of ToolContext.resolved_paths for a directory entry resolved without following
# its last component; a NUL cannot occur in a real path, so the keys never collide.
_ENTRY_KEY = "\0entry:"


def check_path_text(raw: str, what: str = "path") -> None:
    """Refuse a path no file system could hold, with a one-line reason."""
    if "\0" in raw:
        raise ToolError(f"The {what} contains a NUL byte, which no file name can hold; remove it and call again.")
    if len(raw) > limits.MAX_PATH_CHARS:
        raise ToolError(f"The {what} is {len(raw):,} characters long, over the {limits.MAX_PATH_CHARS:,} "
                        "a path can have; give the real path.")
    try:
        # Stray bytes of an undecodable name come back as \udc80-\udcff and are fine.
        encoded = os.fsencode(raw)
    except UnicodeError:
        raise ToolError(f"The {what} contains characters that cannot be a file name (a lone surrogate "
                        "such as \\ud800); give the path in plain text.") from None
    longest = max(len(name) for name in encoded.split(b"/"))
    if longest > limits.MAX_NAME_BYTES:
        raise ToolError(f"The {what} has a name {longest:,} bytes long, over the {limits.MAX_NAME_BYTES} "
                        "bytes a file or folder name can have; give the real path.")


def resolve_path(ctx: ToolContext, raw: str) -> Path:
    """``raw`` resolved (symlinks followed) the way it was first resolved in this call."""
    known = ctx.resolved_paths.get(raw)
    if known is not None:
        return known
    check_path_text(raw)
    try:
        resolved = ctx.resolve(raw)
    except (OSError, ValueError) as error:
        raise ToolError(f"Cannot resolve the path {raw[:200]!r}: {error}.") from None
    ctx.resolved_paths[raw] = resolved
    return resolved


def resolve_entry(ctx: ToolContext, raw: str) -> Path:
    """The directory entry ``raw`` names: its folder resolved, its last component kept.

    Deleting a symlink removes the link itself; this is the path of that link.
    """
    key = _ENTRY_KEY + raw
    known = ctx.resolved_paths.get(key)
    if known is not None:
        return known
    check_path_text(raw)
    folder, name = os.path.split(os.path.expanduser(raw))
    if name in ("", ".", ".."):
        resolved = resolve_path(ctx, raw)
    else:
        resolved = resolve_path(ctx, folder or ".") / name
    ctx.resolved_paths[key] = resolved
    return resolved
