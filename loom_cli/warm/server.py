"""The warm server: Loom and the provider SDKs imported once, a forked child per `loom`.

Started by a client that found none (``python -m loom_cli.warm.server SOCKET IDLE_S``,
detached, in a minimal environment: the first caller's keys never live in the server).
It checks that its own build matches the socket's name, imports everything, and only
then puts the socket in place, so a socket that exists is a server that is ready. It
serves its own user only (SO_PEERCRED), stays single-threaded (forking it is safe), and
exits after ``IDLE_S`` seconds with no client and no child.

Each run request forks a child (:mod:`.child`). The server keeps the client's connection:
the signals the client forwards reach the child from here, the child's stop and exit
reach the client from here (``waitpid``, as a shell does), and when the client goes away
the child gets SIGHUP, then SIGKILL if it is still there ``HANGUP_GRACE_S`` later.
"""

from __future__ import annotations

import fcntl
import gc
import os
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import place
from .protocol import (
    ACCEPTED,
    REFUSED,
    STOPPED,
    ControlRequest,
    ProtocolError,
    RunRequest,
    exited,
    peer_pid,
    peer_uid,
    receive_request,
    send_json,
)

HANGUP_GRACE_S = 5.0
REQUEST_TIMEOUT_S = 5.0  # a client that connects and says nothing does not hold the server
# Terminal signals go to the child's whole process group, as a terminal sends them; the
# others (kill PID) to the child alone.
_TO_GROUP = frozenset({signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGCONT, signal.SIGWINCH})
FORWARDED = frozenset(_TO_GROUP | {signal.SIGTERM, signal.SIGHUP})


@dataclass
class Running:
    pid: int
    conn: socket.socket | None  # None once the client went away
    hangup_at: float | None = None  # when SIGHUP was sent


@dataclass
class Server:
    listener: socket.socket
    socket_path: Path
    idle_s: float
    lock: int  # the build's lock file, held for the server's life (not by its children)
    socket_inode: int  # the socket file's (a newer server's socket at the same path is not ours)
    confined: str  # this server's confinement: it runs only clients confined as it is
    started: float = field(default_factory=time.time)
    children: dict[int, Running] = field(default_factory=dict)
    stopping: bool = False

    def serve(self) -> None:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only wakes the loop (the fd above)
        signal.signal(signal.SIGTERM, lambda *_: self._stop())
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "listener")
        self.selector.register(wake_read, selectors.EVENT_READ, "wake")
        self.wake = (wake_read, wake_write)
        last_busy = time.monotonic()
        while True:
            if self.children:
                last_busy = time.monotonic()
            idle_left = self.idle_s - (time.monotonic() - last_busy)
            if (self.stopping or idle_left <= 0) and not self.children:
                break
            for key, _events in self.selector.select(timeout=self._timeout(idle_left)):
                if key.data == "listener":
                    self._accept()
                    last_busy = time.monotonic()
                elif key.data == "wake":
                    os.read(wake_read, 512)
                else:
                    self._from_client(key.data)
            self._reap()
            self._kill_hung_up()
        self._unlink_socket()

    def _timeout(self, idle_left: float) -> float:
        deadlines = [r.hangup_at + HANGUP_GRACE_S - time.monotonic()
                     for r in self.children.values() if r.hangup_at is not None]
        return max(0.0, min([idle_left, *deadlines]))

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        if peer_uid(conn) != os.getuid():
            conn.close()
            return
        conn.settimeout(REQUEST_TIMEOUT_S)
        try:
            request, fds = receive_request(conn)
        except (ProtocolError, OSError):
            conn.close()
            return
        if isinstance(request, ControlRequest):
            self._control(conn, request)
        elif (request.socket_name != self.socket_path.name or self.stopping or len(fds) != 3
              or place.confinement(peer_pid(conn)) != self.confined):  # the client's, read now from /proc
            _send(conn, REFUSED)
            conn.close()
        else:
            self._fork(conn, request, fds)
        for fd in fds:
            os.close(fd)

    def _control(self, conn: socket.socket, request: ControlRequest) -> None:
        try:
            if request.action == "stop":
                self._stop()
            send_json(conn, {"pid": os.getpid(), "socket": str(self.socket_path), "started": self.started,
                             "idle_s": self.idle_s, "running": len(self.children), "stopping": self.stopping})
        except OSError:
            pass
        conn.close()

    def _stop(self) -> None:
        """Take no more requests; exit once the running children have ended."""
        if not self.stopping:
            self.stopping = True
            self._unlink_socket()
            self.selector.unregister(self.listener)
            self.listener.close()

    def _fork(self, conn: socket.socket, request: RunRequest, fds: list[int]) -> None:
        pid = os.fork()
        if pid == 0:
            self._in_child(conn, request, fds)
        conn.settimeout(None)
        if not _send(conn, ACCEPTED):
            os.kill(pid, signal.SIGHUP)
        self.children[pid] = Running(pid, conn)
        self.selector.register(conn, selectors.EVENT_READ, pid)

    def _in_child(self, conn: socket.socket, request: RunRequest, fds: list[int]) -> None:
        from .child import become_caller, run_loom

        code = 1
        try:
            self.selector.close()
            for fd in self.wake:
                os.close(fd)
            self.listener.close()
            os.close(self.lock)
            conn.close()
            for running in self.children.values():
                if running.conn is not None:
                    running.conn.close()
            become_caller(request, fds)
            code = run_loom()
        finally:
            os._exit(code)

    def _from_client(self, pid: int) -> None:
        running = self.children.get(pid)
        if running is None or running.conn is None:
            return
        try:
            data = running.conn.recv(64)
        except OSError:
            data = b""
        if not data:  # the client is gone: as when a terminal hangs up
            self._drop_client(running)
            _signal(running.pid, signal.SIGHUP, group=False)
            running.hangup_at = time.monotonic()
            return
        for number in data:
            if number in FORWARDED:
                _signal(running.pid, signal.Signals(number), group=number in _TO_GROUP)

    def _drop_client(self, running: Running) -> None:
        if running.conn is not None:
            self.selector.unregister(running.conn)
            running.conn.close()
            running.conn = None

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG | os.WUNTRACED)
            except ChildProcessError:
                return
            if pid == 0:
                return
            running = self.children.get(pid)
            if running is None:
                continue
            if os.WIFSTOPPED(status):
                if running.conn is not None:
                    _send(running.conn, STOPPED)
                continue
            code = os.waitstatus_to_exitcode(status)
            if running.conn is not None:
                _send(running.conn, exited(code))
                self._drop_client(running)
            del self.children[pid]

    def _kill_hung_up(self) -> None:
        now = time.monotonic()
        for running in self.children.values():
            if running.hangup_at is not None and now - running.hangup_at >= HANGUP_GRACE_S:
                _signal(running.pid, signal.SIGKILL, group=False)

    def _unlink_socket(self) -> None:
        """Remove the socket if it is still this server's (a newer one may have replaced it)."""
        try:
            if os.stat(self.socket_path).st_ino == self.socket_inode:
                self.socket_path.unlink()
        except OSError:
            pass


def _send(conn: socket.socket, data: bytes) -> bool:
    try:
        conn.sendall(data)
        return True
    except OSError:
        return False


def _signal(pid: int, number: signal.Signals, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, number)
        else:
            os.kill(pid, number)
    except ProcessLookupError:
        pass


# Modules a child imports for itself: Ray reads its user's environment and files when it
# is imported (the cluster token under ~/.ray), so a server that imported it would hand
# every child the server's - and `loom batch --executor ray` is rare enough to pay it.
NOT_PRELOADED = ("loom_cli.batch.ray_",)


def preload() -> None:
    """Import what any `loom` command needs: both SDKs (with what their first request
    loads) and every module of Loom's packages (but :data:`NOT_PRELOADED`)."""
    import importlib
    import pkgutil

    from loom_engine.providers.sdk_preload import SDK_MODULES, import_sdk

    for provider in SDK_MODULES:
        import_sdk(provider)
    root = Path(place.install_root())
    for package in place.PACKAGES:
        for module in pkgutil.walk_packages([str(root / package)], prefix=f"{package}."):
            if module.name.rsplit(".", 1)[-1] == "__main__" or module.name.startswith(NOT_PRELOADED):
                continue
            try:
                importlib.import_module(module.name)
            except Exception:  # an optional dependency missing: the child imports it (and fails) as cold would
                continue


def main(argv: list[str] | None = None) -> None:
    socket_path, idle_s = _arguments(sys.argv[1:] if argv is None else argv)
    folder = socket_path.parent
    if not place.private_folder(str(folder)):
        sys.exit(1)
    lock = os.open(place.lock_path(str(socket_path)), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(0)  # another server of this build is starting or running
    os.utime(lock)  # when a server of this build last started (the clients' back-off)
    expected = socket_path.name
    confined = place.confinement()
    if confined is None:
        sys.exit(1)  # what confines this process cannot be read: no client could be checked
    if _own_name(confined) != expected:
        sys.exit(0)  # Loom changed since the client looked: it starts the right server
    preload()
    if _own_name(confined) != expected:
        sys.exit(0)  # changed while importing: this server's modules may be stale
    if threading.active_count() != 1:
        sys.exit(0)  # an import started a thread: forking this process would not be safe
    _stop_older_servers(folder, expected, confined)
    # What is imported now lives as long as the server: out of the collector's sight, a
    # child's collections do not touch (and so copy) the server's pages.
    gc.freeze()
    listener = _listen(socket_path)
    Server(listener, socket_path, idle_s, lock, os.stat(socket_path).st_ino, confined).serve()


def _own_name(confined: str) -> str:
    return place.socket_name(sys.executable, confined, place.fingerprint())


def _arguments(args: list[str]) -> tuple[Path, float]:
    if len(args) != 2:
        sys.exit("usage: python -m loom_cli.warm.server SOCKET IDLE_SECONDS")
    return Path(args[0]), float(args[1])


def _listen(socket_path: Path) -> socket.socket:
    """Bound under a temporary name and renamed into place once listening: a client
    never finds a socket nobody answers (a stale one from a crash is replaced)."""
    temporary = socket_path.with_name(f".{os.getpid()}.sock")  # shorter than the final name
    temporary.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(temporary))
    os.chmod(temporary, 0o600)
    listener.listen(64)
    os.replace(temporary, socket_path)
    return listener


def _stop_older_servers(folder: Path, current: str, confined: str) -> None:
    """Servers of this Python and confinement for another build of Loom will never be asked again."""
    from .control import ask

    prefix = place.executable_prefix(sys.executable, confined)
    for path in folder.glob(f"{prefix}*{place.SOCKET_SUFFIX}"):
        if path.name != current:
            ask(path, "stop")


if __name__ == "__main__":
    main()
