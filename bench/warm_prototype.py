"""A measured prototype of the warm-process route of issue 21 item 10 (not a product
feature): a fork server holding the provider SDK and Loom's modules already imported,
and a thin client that hands it one `loom` command line.

The server imports everything a `loom run` needs, then waits on a Unix socket in a 0700
folder; it answers only its own user (SO_PEERCRED). For each command line a client
sends (argv, working folder, environment, and its standard streams as file descriptors)
it forks; the child takes the client's streams, folder and environment and runs `loom`'s
own `main()`, then reports the exit code. The client exits with it. The server stays
single-threaded, so forking it is safe; it exits after ``IDLE_EXIT_S`` without a client.

What a real feature would add: a check that the server runs the installed version,
signals forwarded (Ctrl+C), the chat's controlling terminal, and settings read at import
time by any module.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

IDLE_EXIT_S = 600.0


def _preload(modules_file: Path | None) -> None:
    import importlib

    from loom_engine.providers.sdk_preload import import_sdk

    import_sdk("anthropic")
    import_sdk("openai")
    names = modules_file.read_text().split() if modules_file else []
    for name in ("loom_cli.main", *names):
        try:
            importlib.import_module(name)
        except Exception:
            continue


def serve(socket_path: Path, modules_file: Path | None) -> None:
    import signal

    _preload(modules_file)
    socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(socket_path.parent, 0o700)
    if socket_path.exists():
        socket_path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen(16)
    listener.settimeout(IDLE_EXIT_S)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _child(conn)
        conn.close()


def _child(conn: socket.socket) -> None:
    code = 1
    try:
        head, fds, _flags, _addr = socket.recv_fds(conn, 8, 3)
        (size,) = struct.unpack("!Q", head)
        payload = b""
        while len(payload) < size:
            payload += conn.recv(size - len(payload))
        request = json.loads(payload)
        _hang_up_with_the_client(conn)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = request["argv"]
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
        from loom_cli.main import main

        # `loom run` ends with os._exit (loom_cli/exit.py): the client hears the code first.
        real_exit = os._exit

        def reporting_exit(status: int) -> None:
            conn.sendall(struct.pack("!i", status))
            real_exit(status)

        os._exit = reporting_exit  # type: ignore[assignment]
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(struct.pack("!i", code))
        finally:
            os._exit(code)


def _hang_up_with_the_client(conn: socket.socket) -> None:
    """The client sends nothing after its request: when its end closes (it was killed,
    say), this child gets SIGHUP, as a program does when its terminal goes away."""
    import signal
    import threading

    def watch() -> None:
        while conn.recv(1):
            pass
        os.kill(os.getpid(), signal.SIGHUP)

    threading.Thread(target=watch, daemon=True, name="client-watch").start()


def start_server(socket_path: Path, modules: Path, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """The fork server, running and ready (the caller terminates it)."""
    serving = subprocess.Popen([sys.executable, __file__, "serve", str(socket_path), str(modules)], cwd=cwd, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert serving.stdout is not None
    if serving.stdout.readline().strip() != "ready":
        serving.kill()
        raise RuntimeError("the warm prototype did not start")
    return serving


def client_argv(socket_path: Path, *loom_args: str) -> list[str]:
    return [sys.executable, "-S", "-I", __file__, "client", str(socket_path), *loom_args]


def client(socket_path: Path, argv: list[str]) -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(socket_path))
    payload = json.dumps({"argv": ["loom", *argv], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    socket.send_fds(conn, [struct.pack("!Q", len(payload))], [0, 1, 2])
    conn.sendall(payload)
    answer = b""
    while len(answer) < 4:
        chunk = conn.recv(4 - len(answer))
        if not chunk:
            return 1
        answer += chunk
    return int(struct.unpack("!i", answer)[0])


def record_modules(out: Path, argv: list[str]) -> None:
    """Run `loom ARGV` here and write the names of the modules it imported to ``out``
    (at exit: `loom run` ends with os._exit after the exit handlers)."""
    import atexit

    atexit.register(lambda: out.write_text("\n".join(sorted(sys.modules))))
    sys.argv = ["loom", *argv]
    from loom_cli.main import main

    main()


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record_modules(Path(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "serve":
        serve(Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
    else:
        sys.exit(client(Path(sys.argv[2]), sys.argv[3:]))
