"""What glob, grep and ls have in common: read-only tools over the folder in `path`."""

from __future__ import annotations

from pathlib import Path

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


class RuledOut:
    """What a search leaves out because a permission rule denies reading it or asks first
    (a search cannot stop to ask about each file). The rules are the permission
    manager's, asked through the tool context; this only counts what they withhold."""

    def __init__(self, ctx: ToolContext, tool: str) -> None:
        rules = ctx.read_rules
        self._withheld = rules.withheld_reads(tool) if rules is not None else None
        self.count = 0

    @property
    def active(self) -> bool:
        """Whether any rule could leave something out (else no path need be checked)."""
        return self._withheld is not None

    def keeps(self, path: Path) -> bool:
        """Whether ``path`` (as found on disk) may be shown; counts it when not."""
        if self._withheld is None or not self._withheld(path):
            return True
        self.count += 1
        return False

    def counted_note(self) -> str | None:
        """The note naming how many paths were left out (never which), or None."""
        if not self.count:
            return None
        paths = "1 path" if self.count == 1 else f"{self.count} paths"
        return (f"[{paths} left out: permission rules deny reading them or ask first, "
                "and a search cannot ask.]")

    def search_note(self) -> str | None:
        """grep's note: it says that rules leave files out, not how many, since a count
        of matching files would tell what the left-out files contain."""
        if self._withheld is None:
            return None
        return ("[Files that permission rules deny reading, or ask about first, are left out "
                "of this search.]")
