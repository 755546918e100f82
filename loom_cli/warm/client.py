"""The `loom` command: hand the command line to the warm server, or run it here.

This is the console entry point, so it imports only the standard library's cheap parts
until it knows it will run Loom in this process. With a warm server of this exact build
running (see :mod:`.place`), it sends the command line, the working folder, the
environment, the umask and its standard streams (as file descriptors) to the server,
forwards the signals it gets (Ctrl+C, window resizes, Ctrl+Z, kill) to the child the
server forked, and ends as the child ended.

Anything else — the warm server turned off, no server, a stale socket, a server of
another user, a refused request — runs Loom's ``main()`` here exactly as before, after
starting a server in the background for the next `loom` (when the socket's folder is
safe). Nothing is printed about it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from types import FrameType

from . import place
from .protocol import (
    ACCEPTED,
    EXITED,
    STOPPED,
    ProtocolError,
    RunRequest,
    Stream,
    peer_uid,
    read_status,
    send_request,
)

CONNECT_TIMEOUT_S = 2.0
# The environment a server starts with: what finding Python and Loom needs, and nothing
# of the caller's secrets (each child gets its own caller's environment).
_SERVER_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "XDG_RUNTIME_DIR",
                       "XDG_CACHE_HOME")
# Signals passed on to the child (the server maps them to the child's process group).
_FORWARD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH, signal.SIGTSTP,
            signal.SIGCONT)


def main() -> None:
    status = run_warm(sys.argv)
    if status is None:
        from loom_cli.main import main as run_here

        run_here()
        return
    if status < 0:  # the child died of a signal: so does this process, for the shell to see
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def run_warm(argv: list[str]) -> int | None:
    """The child's status after a warm run, or None when this process must run Loom
    itself (a server is started for next time where that is safe)."""
    if not place.supported() or argv[1:2] == ["server"]:
        return None  # `loom server` talks to the servers itself
    choice = place.choose(os.environ)
    if not choice.enabled:
        return None
    folder = place.socket_folder(os.environ, create=True)
    if folder is None:
        return None
    confined = place.confinement()
    if confined is None:
        return None
    path = os.path.join(folder, place.socket_name(sys.executable, confined, place.fingerprint()))
    if len(os.fsencode(path)) > place.MAX_SOCKET_PATH:
        return None
    request = _request(argv, os.path.basename(path))
    if request is None:
        return None
    conn = _connect(path)
    if conn is None:
        import time

        if not place.recently_started(path, time.time()):
            start_server(path, choice.idle_s)
        return None
    try:
        return _run_through(conn, request)
    finally:
        conn.close()


def _request(argv: list[str], socket_name: str) -> RunRequest | None:
    streams = []
    for fd, stream in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        if stream is None or stream.encoding is None:
            return None
        try:
            os.fstat(fd)
        except OSError:
            return None  # a closed standard stream: nothing to hand over
        streams.append(Stream(stream.encoding, stream.errors or "strict"))
    try:
        cwd = os.getcwd()
    except OSError:
        return None  # the folder was removed: the cold path reports it
    umask = os.umask(0o022)
    os.umask(umask)
    return RunRequest(socket_name=socket_name, argv=list(argv), cwd=cwd, env=dict(os.environ), umask=umask,
                      streams=streams)


def _connect(path: str) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT_S)
    try:
        conn.connect(path)
        if peer_uid(conn) == os.getuid():
            return conn
    except OSError:
        pass
    conn.close()
    return None


def _run_through(conn: socket.socket, request: RunRequest) -> int | None:
    try:
        send_request(conn, request, [0, 1, 2])
        if conn.recv(1) != ACCEPTED:
            return None
    except OSError:
        return None
    conn.settimeout(None)  # the child runs as long as it runs

    def forward(number: int, _frame: FrameType | None) -> None:
        try:
            conn.send(bytes([number]))
        except OSError:
            pass

    for number in _FORWARD:
        signal.signal(number, forward)
    try:
        return _until_exit(conn)
    except (OSError, ProtocolError):
        sys.stderr.write("loom: the warm server went away (`loom server stop`, or LOOM_WARM=0 to run without it)\n")
        return 1


def _until_exit(conn: socket.socket) -> int:
    while True:
        tag = conn.recv(1)
        if tag == EXITED:
            return read_status(conn)
        if tag == STOPPED:  # Ctrl+Z: the child stopped; stop here too, for the shell's job control
            os.kill(os.getpid(), signal.SIGSTOP)
            continue  # `fg` sends SIGCONT here, which is forwarded
        raise ProtocolError("the server closed the connection")


def start_server(path: str, idle_s: float) -> None:
    """A server for this build, detached (its own session, no terminal, stdio to
    /dev/null, a minimal environment, in /): it is ready once the socket exists."""
    import subprocess

    environment = {name: os.environ[name] for name in _SERVER_ENVIRONMENT if name in os.environ}
    try:
        subprocess.Popen([sys.executable, "-m", "loom_cli.warm.server", path, repr(idle_s)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd="/", env=environment, start_new_session=True, close_fds=True)
    except OSError:
        pass  # no server this time; this `loom` runs as always
