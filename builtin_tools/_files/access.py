"""The tools' file I/O: Loom's own (the disk, opened without following links) or a
front end's :class:`~loom_engine.tools.io.FileAccess` (an editor's buffers).

The tools do their reading and writing in a worker thread, so they see the backend as
:class:`BlockingFiles`: Loom's own is called directly there, as it always was; a front
end's (asynchronous: a request to the editor) is run on the event loop the tool call
came from while the worker waits for it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from loom_engine.tools.base import ToolContext
from loom_engine.tools.io import FileAccess, OpenedFile

from .safe_io import open_regular, write_file_at


def open_local(path: Path, shown: str) -> OpenedFile:
    """``path`` opened from disk without following any symlink (see safe_io)."""
    fd, st = open_regular(path, shown)
    return OpenedFile(os.fdopen(fd, "rb"), st.st_size, st.st_mode)


class LocalFileAccess:
    """Loom's own file I/O, as a :class:`FileAccess` (the default behind every tool)."""

    async def open_read(self, path: Path, shown: str) -> OpenedFile:
        return await asyncio.to_thread(open_local, path, shown)

    async def write(self, path: Path, data: bytes, *, mode: int | None, shown: str) -> None:
        await asyncio.to_thread(write_file_at, path, data, mode, shown)


class BlockingFiles:
    """A tool's file backend as its worker thread calls it."""

    def __init__(self, files: FileAccess | None, loop: asyncio.AbstractEventLoop | None) -> None:
        self._files = files
        self._loop = loop

    @property
    def local(self) -> bool:
        return self._files is None

    def open_read(self, path: Path, shown: str) -> OpenedFile:
        if self._files is None or self._loop is None:
            return open_local(path, shown)
        return asyncio.run_coroutine_threadsafe(self._files.open_read(path, shown), self._loop).result()

    def write(self, path: Path, data: bytes, mode: int | None, shown: str) -> None:
        if self._files is None or self._loop is None:
            write_file_at(path, data, mode, shown)
            return
        asyncio.run_coroutine_threadsafe(self._files.write(path, data, mode=mode, shown=shown),
                                         self._loop).result()


LOCAL_FILES = BlockingFiles(None, None)


def blocking_files(ctx: ToolContext) -> BlockingFiles:
    """The backend of ``ctx``'s call, for its worker thread; call on the event loop."""
    if ctx.files is None:
        return LOCAL_FILES
    return BlockingFiles(ctx.files, asyncio.get_running_loop())
