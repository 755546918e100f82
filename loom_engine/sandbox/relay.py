"""The sandbox's end of Loom's proxy: a relay on 127.0.0.1 inside, and how to start it.

Under ``network = "allowlist"`` a command runs in a network namespace with only its own
loopback, so it cannot reach the proxy in Loom's process. This module, run in front of
the command (:func:`relay_argv` builds the line; ``python -I -S relay.py`` works too)::

    relay --port 3128 --connect /tmp/loom-proxy-x/proxy.sock -- bash -c CMD
    relay --port 3128 --pass-fd 3 -- bash -c CMD

binds 127.0.0.1:PORT, forks, and execs the command in the original process, so the
command keeps its pid, exit status, signals and process group. The forked relay forwards
each connection to the proxy: ``--connect`` opens the proxy's Unix socket per connection
and copies bytes both ways; ``--pass-fd`` hands the accepted connection itself over an
inherited channel (:meth:`DomainProxy.open_channel`), which needs no socket file inside
and no ``socket(AF_UNIX)`` call.

The relay dies with the command: it holds a pidfd of the command's process and exits the
moment that process does (``PR_SET_PDEATHSIG`` where the kernel has no pidfds), and a
sandbox's PID namespace would end it anyway. The listener is bound before the command
starts, so no connection can come too early. Until the first connection the relay only
waits, so it takes no CPU from the command's start. Standard library only, started with
``-I -S``: it starts in little more than a bare interpreter's time, and nothing the
project's environment sets can change it.
"""

from __future__ import annotations

# Only what the command's start-up path needs: ``socket`` and ``typing`` would double the
# interpreter's start time, so the listener is made with ``_socket``, and the rest is
# imported in the relay after the fork.
import _socket
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    import threading
    from collections.abc import Sequence

# Inside the sandbox's own network namespace, so no clash with anything on the machine.
DEFAULT_PORT = 3128
MAX_CONNECTIONS = 128
_PR_SET_PDEATHSIG = 1
_EXIT_RELAY_FAILED = 125  # as env(1) and timeout(1) do when the wrapper itself fails
_EXIT_COMMAND_NOT_RUN = 127
_USAGE = "usage: relay.py --port PORT (--connect SOCKET | --pass-fd FD) -- COMMAND [ARG...]"
# Every client here speaks to an HTTP proxy, so this is how it learns the proxy is gone.
_PROXY_GONE_MESSAGE = b"Loom's sandbox proxy is not running: no network for this command\n"
PROXY_GONE = (b"HTTP/1.1 502 Loom's sandbox proxy is not running\r\nContent-Type: text/plain\r\n"
              b"Content-Length: " + str(len(_PROXY_GONE_MESSAGE)).encode() + b"\r\nConnection: close\r\n\r\n"
              + _PROXY_GONE_MESSAGE)


def proxy_environment(port: int = DEFAULT_PORT) -> dict[str, str]:
    """The variables that send a sandboxed command's http(s) traffic to the relay on ``port``.

    Upper and lower case, since tools differ (curl reads ``http_proxy`` only in lower
    case). Loopback stays direct: inside the sandbox it is the sandbox's own.
    """
    url = f"http://127.0.0.1:{port}"
    environment: dict[str, str] = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        environment[name] = environment[name.lower()] = url
    environment["NO_PROXY"] = environment["no_proxy"] = "localhost,127.0.0.1,::1"
    # Node's own fetch and http read the variables above only when asked (Node 22.21+, 24+).
    environment["NODE_USE_ENV_PROXY"] = "1"
    return environment


def relay_argv(port: int = DEFAULT_PORT, *, socket_path: str | os.PathLike[str] | None = None,
               channel_fd: int | None = None, python: str = sys.executable) -> list[str]:
    """The argv prefix that starts the relay; append the command (``["bash", "-c", cmd]``).

    Exactly one of ``socket_path`` (the proxy's :attr:`socket_path`; its folder must be
    bound into the sandbox) or ``channel_fd`` (the number under which the sandboxed
    process inherits :meth:`DomainProxy.open_channel`'s socket: pass it in ``pass_fds``).
    """
    if (socket_path is None) == (channel_fd is None):
        raise ValueError("relay_argv needs exactly one of socket_path or channel_fd")
    target = ["--connect", os.fspath(socket_path)] if socket_path is not None else ["--pass-fd", str(channel_fd)]
    # Imported rather than run as a script, so its cached bytecode is used (a script is
    # compiled on every start). Its folder goes last on the path: the standard library wins.
    folder, module = os.path.split(os.path.splitext(os.path.abspath(__file__))[0])
    start = f"import sys; sys.path.append({folder!r}); import {module}; sys.exit({module}.main(sys.argv[1:]))"
    return [python, "-I", "-S", "-c", start, "--port", str(port), *target, "--"]


def main(argv: Sequence[str]) -> int:
    try:
        port, connect_to, channel_fd, command = _parse(argv)
        if channel_fd is not None:
            _check_descriptor(channel_fd)
    except ValueError as error:
        print(f"loom sandbox relay: {error}\n{_USAGE}", file=sys.stderr)
        return _EXIT_RELAY_FAILED
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(MAX_CONNECTIONS)
    except OSError as error:
        print(f"loom sandbox relay: cannot listen on 127.0.0.1:{port}: {error.strerror}", file=sys.stderr)
        return _EXIT_RELAY_FAILED
    command_pid = os.getpid()  # after the exec below, this process is the command
    command_exit = _pidfd(command_pid)
    try:
        child = os.fork()
    except OSError as error:
        print(f"loom sandbox relay: cannot start: {error.strerror}", file=sys.stderr)
        return _EXIT_RELAY_FAILED
    if child == 0:
        _run_relay(_Relay(listener, connect_to, channel_fd), command_pid, command_exit)  # never returns
    # The command keeps none of the relay's descriptors: no way to hand the proxy its own sockets.
    listener.close()
    for fd in (channel_fd, command_exit):
        if fd is not None:
            os.close(fd)
    _restore_signals()
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"loom sandbox relay: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
    return _EXIT_COMMAND_NOT_RUN


def _parse(argv: Sequence[str]) -> tuple[int, str | None, int | None, list[str]]:
    if "--" not in argv:
        raise ValueError("no command after --")
    split = list(argv).index("--")
    options, command = list(argv[:split]), list(argv[split + 1:])
    if not command:
        raise ValueError("no command after --")
    if len(options) != 4 or options[0] != "--port" or options[2] not in ("--connect", "--pass-fd"):
        raise ValueError("expected --port PORT and one of --connect SOCKET or --pass-fd FD")
    if not options[1].isdigit() or not 0 < int(options[1]) < 65536:
        raise ValueError(f"the port is not a number from 1 to 65535: {options[1]}")
    if options[2] == "--connect":
        return int(options[1]), options[3], None, command
    if not options[3].isdigit():
        raise ValueError(f"the channel is not a file descriptor number: {options[3]}")
    return int(options[1]), None, int(options[3]), command


def _check_descriptor(fd: int) -> None:
    try:
        os.fstat(fd)
    except OSError:
        raise ValueError(f"no channel on file descriptor {fd}") from None


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits; None where the kernel has none (before 5.3)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _restore_signals() -> None:
    """Undo what Python's start-up ignores, since ignored signals survive exec (``yes | head`` needs SIGPIPE)."""
    # The C half of ``signal``, already loaded: ``signal`` itself would import enum.
    import _signal  # type: ignore[import-not-found]

    for name in ("SIGPIPE", "SIGXFSZ"):
        number: int | None = getattr(_signal, name, None)
        if number is not None:
            _signal.signal(number, _signal.SIG_DFL)


def _run_relay(relay: _Relay, command_pid: int, command_exit: int | None) -> None:
    """The forked relay: serves until the command's process is gone, then exits."""
    status = 0
    try:
        _detach_from_output()
        if command_exit is None:
            _die_with_parent(command_pid)
        import select

        watched = [relay.listener_fd] if command_exit is None else [relay.listener_fd, command_exit]
        while True:
            ready, _, _ = select.select(watched, [], [])
            if command_exit in ready:
                break
            relay.accept_one()
    except BaseException:
        status = 1
    finally:
        os._exit(status)  # never the command's exec path, nor atexit handlers, in the relay


def _detach_from_output() -> None:
    """The command's output pipe must reach EOF when the command ends, not when the relay does."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _die_with_parent(parent: int) -> None:
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the command exited before the request took effect
        os._exit(0)


class _Relay:
    """Hands connections from the listener to the proxy; the ``socket`` module is loaded at the first."""

    def __init__(self, listener: _socket.socket, connect_to: str | None, channel_fd: int | None) -> None:
        self.listener_fd = listener.fileno()
        self._bound = listener
        self._connect_to = connect_to
        self._channel_fd = channel_fd
        self._listener: socket.socket | None = None
        self._channel: socket.socket | None = None
        self._slots: threading.BoundedSemaphore | None = None

    def accept_one(self) -> None:
        import socket

        if self._listener is None:
            self._listener = socket.socket(fileno=self._bound.detach())
        connection, _ = self._listener.accept()
        if self._connect_to is not None:
            self._forward(connection, self._connect_to)
        else:
            self._pass(connection)

    def _pass(self, connection: socket.socket) -> None:
        """Over the inherited channel; once that fails (the proxy is gone), every client is told so."""
        import socket

        if self._channel is None and self._channel_fd is not None:
            self._channel = socket.socket(fileno=self._channel_fd)
            self._channel_fd = None
        with connection:
            if self._channel is not None:
                try:
                    socket.send_fds(self._channel, [b"c"], [connection.fileno()])
                    return
                except OSError:
                    self._channel.close()
                    self._channel = None
            _tell_proxy_gone(connection)

    def _forward(self, connection: socket.socket, socket_path: str) -> None:
        import threading

        if self._slots is None:
            self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        if not self._slots.acquire(blocking=False):
            connection.close()  # over the cap: refused rather than queued without end
            return
        threading.Thread(target=_forward, args=(connection, socket_path, self._slots), daemon=True).start()


def _forward(connection: socket.socket, socket_path: str, slots: threading.BoundedSemaphore) -> None:
    import socket
    import threading

    try:
        with connection, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as proxy:
            try:
                proxy.connect(socket_path)
            except OSError:
                _tell_proxy_gone(connection)
                return
            back = threading.Thread(target=_copy, args=(proxy, connection), daemon=True)
            back.start()
            _copy(connection, proxy)
            back.join()
    finally:
        slots.release()


def _tell_proxy_gone(connection: socket.socket) -> None:
    """Answer 502, then close without resetting: the client's request is read first."""
    import socket

    try:
        connection.settimeout(5)
        connection.sendall(PROXY_GONE)
        connection.shutdown(socket.SHUT_WR)
        while connection.recv(65536):
            pass
    except OSError:
        pass


def _copy(source: socket.socket, sink: socket.socket) -> None:
    """Bytes from ``source`` to ``sink`` until EOF, then half-close ``sink``; an error ends both ways."""
    import socket

    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for side in (source, sink):
            try:
                side.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
