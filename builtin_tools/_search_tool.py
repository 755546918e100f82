"""What glob, grep and ls have in common: read-only tools over the folder in `path`."""

from __future__ import annotations

from loom_engine.permissions.targets import FileAccess, PermissionTarget
from loom_engine.tools.base import ArgsT, BaseTool, ToolContext, ToolError

from ._files import limits
from ._files.paths import resolve_path
from ._files.rg import find_rg


def check_pattern(pattern: str, what: str = "pattern") -> None:
    """Refuse a search pattern no search needs: a NUL byte, or one over the length cap."""
    if "\0" in pattern:
        raise ToolError(f"The {what} contains a NUL byte, which cannot be passed to the search; write it "
                        "as \\x00 (grep) or leave it out.")
    try:
        pattern.encode("utf-8")
    except UnicodeError:
        raise ToolError(f"The {what} contains a lone surrogate (such as \\ud800), which is no character; "
                        "write the text you mean.") from None
    if len(pattern) > limits.MAX_PATTERN_CHARS:
        raise ToolError(f"The {what} is {len(pattern):,} characters, over the {limits.MAX_PATTERN_CHARS:,}-"
                        "character limit: search for a short, distinctive part of it instead.")


class FolderReadTool(BaseTool[ArgsT]):
    """A read-only, concurrency-safe tool whose ``path`` argument is what it reads."""

    is_concurrency_safe = True
    is_read_only = True
    reads_files = True

    def permission_target(self, args: ArgsT, ctx: ToolContext) -> PermissionTarget | None:
        path = args.path if hasattr(args, "path") else "."
        return FileAccess(paths=(str(resolve_path(ctx, path)),), write=False)


class RgSearchTool(FolderReadTool[ArgsT]):
    """A search that runs the rg binary when there is one, and Python's walker when not."""

    def __init__(self, rg_path: str | None = None, *, use_rg: bool = True) -> None:
        # Set to None after a failed start, so the fallback is used from then on.
        self.rg: str | None = (rg_path or find_rg()) if use_rg else None
