"""What a forked child of the warm server does: become the caller's `loom`, run it, exit.

The child takes the caller's standard streams, folder, environment and umask, forgets
what the server's own start left behind (the server's signal handlers, Python's cached
temporary folder), and runs Loom's ordinary ``main()``. Its exit code reaches the client
through the server, which waits for it like a shell (so ``os._exit`` paths, crashes and
signals are reported too).
"""

from __future__ import annotations

import atexit
import importlib
import io
import os
import signal
import sys
import tempfile

from .protocol import RunRequest, Stream

# Modules of Loom's dependencies that read environment variables when imported: read
# again with the caller's environment (Textual's TEXTUAL_* switches, NO_COLOR, ...).
_READ_AT_IMPORT = ("textual.constants",)
# Dispositions the server changed for itself, back to a fresh interpreter's.
_FRESH_DISPOSITIONS: dict[signal.Signals, signal.Handlers | signal._HANDLER] = {
    signal.SIGCHLD: signal.SIG_DFL, signal.SIGTERM: signal.SIG_DFL, signal.SIGHUP: signal.SIG_DFL,
    signal.SIGINT: signal.default_int_handler}


def become_caller(request: RunRequest, fds: list[int]) -> None:
    """Run in the fresh child, before Loom: its own process group (so that Ctrl+Z can stop
    it), the caller's streams on 0, 1, 2, and the caller's folder, environment and umask."""
    signal.set_wakeup_fd(-1)
    for number, disposition in _FRESH_DISPOSITIONS.items():
        signal.signal(number, disposition)
    _hang_up_with_the_server()
    os.setpgid(0, 0)
    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    os.umask(request.umask)
    tempfile.tempdir = None  # recomputed from the caller's TMPDIR on first use
    for name in _READ_AT_IMPORT:
        module = sys.modules.get(name)
        if module is not None:
            importlib.reload(module)
    sys.argv = list(request.argv)
    _standard_streams(request.streams)


def _hang_up_with_the_server() -> None:
    """SIGHUP when the server dies: without it nobody could tell the client how this child
    ended, and it would go on writing to the terminal."""
    from ..parent_death import end_with_parent

    end_with_parent(signal.SIGHUP)


def _standard_streams(streams: list[Stream]) -> None:
    """sys.stdin/stdout/stderr (and the ``__std*__`` originals, which Textual writes to)
    wrapping fds 0-2 as the caller's interpreter would have: its encodings and error
    handlers, stdout line-buffered on a terminal, stderr always line-buffered."""
    stdin_s, stdout_s, stderr_s = streams
    sys.stdin = _text(0, "r", stdin_s, line_buffered=False)
    sys.stdout = _text(1, "w", stdout_s, line_buffered=os.isatty(1))
    sys.stderr = _text(2, "w", stderr_s, line_buffered=True)
    # The originals too: what a fresh interpreter would have there (typeshed calls them Final).
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]


def _text(fd: int, mode: str, stream: Stream, line_buffered: bool) -> io.TextIOWrapper:
    binary: io.BufferedIOBase
    raw = io.FileIO(fd, mode, closefd=False)
    binary = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(binary, encoding=stream.encoding, errors=stream.errors,
                            line_buffering=line_buffered, write_through=False)


def run_loom() -> int:
    """Loom's ``main()`` as the console entry point runs it; returns the exit code after
    the exit handlers ran and the streams are flushed (the caller ends the process)."""
    code = 1
    interrupted = False
    try:
        from loom_cli.main import main

        main()
        code = 0
    except SystemExit as done:
        code = _exit_code(done.code)
    except BaseException as error:
        import traceback

        traceback.print_exc()  # what the interpreter prints for an uncaught exception
        interrupted = isinstance(error, KeyboardInterrupt)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if interrupted:  # the interpreter ends an uncaught Ctrl+C by dying of SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _exit_code(value: object) -> int:
    """What the interpreter makes of ``sys.exit(value)``: None is 0, an int is itself,
    anything else is printed and is 1."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1
