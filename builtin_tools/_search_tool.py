"""What glob, grep and ls have in common: read-only tools over the folder in `path`."""

from __future__ import annotations

from pydantic import BaseModel

from loom_engine.permissions.targets import FileAccess, PermissionTarget
from loom_engine.tools.base import BaseTool, ToolContext

from ._walk import find_rg


class FolderReadTool(BaseTool):
    """A read-only, concurrency-safe tool whose ``path`` argument is what it reads."""

    is_concurrency_safe = True
    is_read_only = True

    def permission_target(self, args: BaseModel, ctx: ToolContext) -> PermissionTarget | None:
        return FileAccess(paths=(getattr(args, "path"),), write=False)


class RgSearchTool(FolderReadTool):
    """A search that runs the rg binary when there is one, and Python's walker when not."""

    def __init__(self, rg_path: str | None = None, *, use_rg: bool = True) -> None:
        # Set to None after a failed start, so the fallback is used from then on.
        self.rg: str | None = (rg_path or find_rg()) if use_rg else None
