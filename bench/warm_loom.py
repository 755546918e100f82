"""The installed `loom` with its warm server (loom_cli/warm/), as a user meets it.

``cold``: a fresh private runtime folder, so no server runs: the first `loom` of the
day, which runs in its own process and starts a server in the background. ``warm``: the
same folder once that server is up (its socket exists): every `loom` after. The servers
are stopped at the end (SIGTERM to the holder of each build's lock file).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOOM_SCRIPT = Path(sys.executable).with_name("loom")
SERVER_START_S = 300.0


@contextmanager
def runtime_folder() -> Iterator[Path]:
    """A fresh XDG_RUNTIME_DIR (0700, short for the socket's 108-byte limit)."""
    folder = Path(tempfile.mkdtemp(prefix="lb-"))
    os.chmod(folder, 0o700)
    try:
        yield folder
    finally:
        stop_servers(folder)
        shutil.rmtree(folder, ignore_errors=True)


def warm_env(env: dict[str, str], runtime: Path) -> dict[str, str]:
    return {**env, "LOOM_WARM": "1", "XDG_RUNTIME_DIR": str(runtime)}


def wait_for_server(runtime: Path) -> None:
    """Until the server the first `loom` started is listening (its socket exists)."""
    deadline = time.monotonic() + SERVER_START_S
    while not list((runtime / "loom").glob("loom-*.sock")):
        if time.monotonic() > deadline:
            raise RuntimeError("the warm server never started")
        time.sleep(0.05)


def stop_servers(runtime: Path) -> None:
    folder = runtime / "loom"
    for lock in folder.glob("*.lock") if folder.is_dir() else []:
        inode = os.stat(lock).st_ino
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[5].endswith(f":{inode}"):
                try:
                    os.kill(int(fields[4]), signal.SIGTERM)
                except ProcessLookupError:
                    pass
