"""Where the built-in tools' raw file I/O and commands happen: a seam a front end may fill.

By default Loom reads and writes the disk itself and starts commands as its own
children (the tools' local backends in ``builtin_tools``). A front end that runs inside
an editor (``loom acp``) can give others: file contents from the editor's buffers, and
commands in the editor's terminal. Only the raw act moves: every check — the path's
resolution and permission, the stale-file test, rewind snapshots, hooks, the sandbox's
wrapping of the command line — happens in Loom before the backend is called, whichever
backend it is.

The backends reach the tools through :class:`~loom_engine.tools.base.ToolContext`
(``files`` and ``commands``; None there means Loom's own) from
:class:`~loom_engine.parts.AgentParts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, Protocol

if TYPE_CHECKING:
    from ..execution import CancelToken


class IOBackendError(Exception):
    """The backend could not do it; ``str()`` is one line naming the cause, for the model."""


@dataclass(frozen=True)
class OpenedFile:
    """A file's bytes to read from the start, and how many there are."""

    handle: BinaryIO
    size: int
    # The opened file's st_mode where the backend opened it itself (None: an editor's
    # buffer, which has none of its own).
    st_mode: int | None = None


class FileAccess(Protocol):
    """Reads and writes a file's contents at a path the caller has already checked.

    ``shown`` is the path as the model knows it, for messages. Errors are OSError (as the
    system reports it) or :class:`IOBackendError`."""

    async def open_read(self, path: Path, shown: str) -> OpenedFile:
        """The current contents of ``path`` (an editor's unsaved buffer counts); the caller
        closes the handle."""
        ...

    async def write(self, path: Path, data: bytes, *, mode: int | None, shown: str) -> None:
        """Replace the contents of ``path`` with ``data`` (missing folders are made);
        ``mode`` keeps an existing file's permission bits where the backend can."""
        ...


Outcome = Literal["exited", "timeout", "aborted"]


@dataclass(frozen=True)
class CommandSpec:
    """One command, ready to start: the command line already wrapped by the sandbox."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    # The tool call it runs for (an editor shows its terminal in that call).
    call_id: str
    # The value of the process-tree marker every process of the command carries.
    marker: str
    # Its processes all end when its first one does (the sandbox's PID namespace).
    contained: bool
    # Descriptors the command must inherit (the sandbox's seccomp program, the proxy's
    # channel). Only a runner that starts the process itself can pass them.
    pass_fds: tuple[int, ...] = ()


@dataclass(frozen=True)
class CommandOutcome:
    how: Outcome
    exit_code: int | None  # as the process ended: negative for a signal
    stopped_background: bool  # processes left running after it exited were stopped
    # The editor terminal it ran in (None: Loom's own child process).
    terminal_id: str | None = None


class CommandRunner(Protocol):
    """Starts a prepared command and sees it to its end, and the end of all it started."""

    async def run(self, spec: CommandSpec, *, output: Callable[[str], None], timeout: float,
                  cancel: CancelToken) -> CommandOutcome:
        """Run ``spec``; ``output`` receives its decoded output (stdout and stderr merged)
        as it comes. On timeout or cancel it is killed. Raises OSError when it cannot be
        started, :class:`IOBackendError` when the backend fails."""
        ...

    def can_pass_descriptors(self) -> bool:
        """Whether the command can inherit ``spec.pass_fds`` (only a local child can)."""
        ...
