"""File contents through the editor: ``fs/read_text_file`` and ``fs/write_text_file``.

The :class:`~loom_engine.tools.io.FileAccess` of a session whose client offers both:
the model reads what the editor holds (an unsaved buffer included) and its writes land
in the editor, which shows them and saves them as it does. Loom's own checks run
before either call, on the path as Loom resolved it (permission rules, the read-before-
write and stale-file tests against the disk, rewind snapshots, hooks).

The editor speaks text; the tools work on bytes so that every file goes through one
decoder. So the editor's text is handed on as UTF-8, which the tools then detect, and
what they write back is that UTF-8 decoded again: the editor keeps the file's own
encoding when it saves.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Protocol

from loom_engine.tools.io import IOBackendError, OpenedFile

from .sdk import ReadTextFileResponse, RequestError, WriteTextFileResponse


class EditorFiles(Protocol):
    """The client's file methods, as the SDK's agent-side connection offers them."""

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None) -> ReadTextFileResponse: ...

    async def write_text_file(self, session_id: str, path: str, content: str) -> WriteTextFileResponse | None: ...


def client_failure(action: str, error: Exception) -> IOBackendError:
    """One line for the model saying why the editor could not do ``action``."""
    if isinstance(error, RequestError):
        detail = error.data.get("details") if isinstance(error.data, dict) else None
        cause = f"{error}" + (f" ({detail})" if isinstance(detail, str) and detail else "")
    else:
        cause = f"{error}" or type(error).__name__
    return IOBackendError(" ".join(f"the editor could not {action}: {cause}".split()))


class ClientFileAccess:
    """Reads and writes files of one ACP session through its client."""

    def __init__(self, client: EditorFiles, session_id: str) -> None:
        self._client = client
        self._session_id = session_id

    async def read_text(self, path: Path, *, line: int | None = None, limit: int | None = None) -> str:
        """The editor's text of ``path`` (lines ``line``.. up to ``limit`` of them, when given)."""
        try:
            answer = await self._client.read_text_file(self._session_id, str(path), line=line, limit=limit)
        except (RequestError, ConnectionError) as error:
            raise client_failure(f"read {path}", error) from None
        return answer.content

    async def open_read(self, path: Path, shown: str) -> OpenedFile:
        # The whole text: the read tool counts a file's lines and decides its encoding
        # from all of it, and the editing tools need all of it anyway.
        data = (await self.read_text(path)).encode("utf-8", errors="surrogatepass")
        return OpenedFile(io.BytesIO(data), len(data))

    async def write(self, path: Path, data: bytes, *, mode: int | None, shown: str) -> None:
        # ``mode`` is the editor's to keep: it owns the file it saves.
        text = data.decode("utf-8", errors="replace")
        try:
            await self._client.write_text_file(self._session_id, str(path), text)
        except (RequestError, ConnectionError) as error:
            raise client_failure(f"write {path}", error) from None
