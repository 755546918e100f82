"""Ending `loom run` at once, once everything it owes is written.

A normal interpreter exit tears down every imported module (thousands, with the SDKs)
and takes about half a second after the answer is printed. Nothing in that teardown
matters once the session file is on disk, the output is flushed and the exit handlers
(which stop what the commands left running) have run; so Loom does those, then ends
the process with ``os._exit``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from loom_engine.sessions.store import SessionWriter


def exit_now(code: int, session: SessionWriter | None = None) -> NoReturn:
    """Close and fsync ``session``, run the exit handlers, flush stdout and stderr, and
    end the process with ``code``."""
    if session is not None:
        session.close()  # flushes the last line and releases the lock
        _fsync(Path(session.path))
    # Registered exit handlers still run: the bash tool's kills what commands left behind.
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`): nothing more to give
            stream.flush()
    os._exit(code)


def _fsync(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # never created (a failed start): nothing to make durable
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
