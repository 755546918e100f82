"""The real `loom` chat in a pseudo-terminal, timed from process start against the fake
LLM server, as a user meets it: first frame; Enter on the first prompt -> the server has
the request; keys typed during that first request and while an answer streams -> the
key on screen; Ctrl+D -> the process gone.

The bench process imports no provider SDK: `loom` is a child process, the server is the
test double's plain HTTP server. A key counts as echoed when its character first appears
in the terminal output: each key is a letter used nowhere else (Greek and Cyrillic; the
streamed answer and the UI are ASCII and box drawing), so the first appearance is the echo.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[P^_][^\x1b]*\x1b\\|[()][0-9A-Za-z]|.)")
# One distinct character per key typed, none of which the UI or the answer ever shows.
_KEYS = "αβγδεζηθικλμνξοπρστυφχψωбвгджзийклмнпрстфхцчшщыэюя"


def unique_keys() -> Iterator[str]:
    yield from _KEYS


class PtyProcess:
    """A child process on a pseudo-terminal; a thread keeps everything it writes, timed."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: dict[str, str], size: tuple[int, int] = (120, 40)):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.started = time.perf_counter()
        self.process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                                        start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.chunks: list[tuple[float, int, bytes]] = []  # (time read, offset, bytes)
        self.size = 0
        self.exited_at: float | None = None
        self._lock = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True, name="pty-reader")
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            now = time.perf_counter()
            with self._lock:
                if not data:
                    self._lock.notify_all()
                    return
                self.chunks.append((now, self.size, data))
                self.size += len(data)
                self._lock.notify_all()

    def write(self, text: str) -> float:
        sent = time.perf_counter()
        os.write(self.master, text.encode())
        return sent

    def first_after(self, needle: bytes, offset: int, timeout: float = 30.0) -> float:
        """When ``needle`` first appeared in the output at or after byte ``offset``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = self._find(needle, offset)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise TimeoutError(f"{needle!r} not shown; last output: {self.tail(600)!r}")
                self._lock.wait(min(left, 0.05))

    def _find(self, needle: bytes, offset: int) -> float | None:
        data = b"".join(chunk for _, start, chunk in self.chunks if start + len(chunk) > offset)
        if not data:
            return None
        base = next(start for _, start, chunk in self.chunks if start + len(chunk) > offset)
        index = data.find(needle, max(0, offset - base))
        if index < 0:
            return None
        at = base + index + len(needle) - 1  # the chunk holding the needle's last byte
        return next(t for t, start, chunk in self.chunks if start <= at < start + len(chunk))

    def shown_text_after(self, text: str, offset: int, timeout: float = 30.0) -> float:
        """When ``text`` appeared on screen (escape sequences removed) after ``offset``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                pieces = [(t, _ANSI.sub(b"", chunk)) for t, start, chunk in self.chunks if start >= offset]
            joined = b""
            for stamp, piece in pieces:
                joined += piece
                if text.encode() in joined:
                    return stamp
            time.sleep(0.02)
        raise TimeoutError(f"{text!r} not shown; last output: {self.tail(600)!r}")

    def tail(self, count: int) -> bytes:
        with self._lock:
            return b"".join(chunk for _, _, chunk in self.chunks)[-count:]

    def wait_idle(self, quiet_s: float = 0.4, timeout: float = 60.0) -> None:
        """Until the process has used no CPU for ``quiet_s`` (its start-up work is done)."""
        deadline = time.monotonic() + timeout
        last, since = self._cpu(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self._cpu()
            if now - last > 0.01:  # a 10 ms allowance: the clock's tick and the cursor blink
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
        raise TimeoutError("loom never settled")

    def _cpu(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait_exit(self, timeout: float = 30.0) -> float:
        self.process.wait(timeout=timeout)
        return time.perf_counter()

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self.master)


@dataclass(frozen=True)
class ChatTimings:
    first_frame_s: float
    settled_s: float
    enter_to_request_s: float
    echo_right_after_enter_ms: float
    echo_first_request_ms: list[float]
    echo_streaming_ms: list[float]
    quit_s: float


def measure_chat(workspace: Path, tmp: Path, server: Any, answer: str) -> ChatTimings:
    from tests.doubles.fake_llm import Reply

    from .bench_headless import RequestClock

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               LOOM_DATA_DIR=str(tmp / "data"), LOOM_CONFIG_DIR=str(tmp / "config"), LOOM_PROVIDER="anthropic",
               LOOM_MODEL="claude-sonnet-4-6", TERM="xterm-256color", COLUMNS="120", LINES="40")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    server.reset()
    # About 6 s of streaming: the first request is held until the keys typed during it are in.
    reply, gate = Reply(text=answer, chunk_size=24, chunk_delay=0.006).held()
    server.enqueue(reply)
    clock = RequestClock(server)
    keys = unique_keys()
    term = PtyProcess([sys.executable, "-m", "loom_cli"], workspace, env)
    try:
        first_frame = term.shown_text_after("Loom", 0, timeout=60) - term.started
        term.wait_idle()
        settled = time.perf_counter() - term.started
        for char in "hello":
            term.write(char)
            time.sleep(0.05)
        term.wait_idle(0.2)
        enter = term.write("\r")
        after_enter = echo(term, next(keys), delay=0.02)
        if not server.wait_for_requests(1, timeout=30):
            raise TimeoutError("the first prompt never reached the server")
        during_request = [echo(term, next(keys)) for _ in range(8)]
        gate.set()
        start = term.size
        term.shown_text_after("Step 1", start, timeout=30)
        streaming = [echo(term, next(keys)) for _ in range(40)]
        term.wait_idle(0.5)
        quit_sent = term.write("\x04")
        quit_s = term.wait_exit() - quit_sent
    finally:
        clock.stop()
        term.kill()
    return ChatTimings(first_frame, settled, clock.times[0] - enter, after_enter, during_request, streaming, quit_s)


def echo(term: PtyProcess, char: str, delay: float = 0.05) -> float:
    """Type ``char`` after ``delay``; milliseconds until it is on screen."""
    time.sleep(delay)
    offset = term.size
    sent = term.write(char)
    return (term.first_after(char.encode(), offset, timeout=30) - sent) * 1000


def measure_ready(argv: Sequence[str], cwd: Path, env: dict[str, str], server: Any, shown: str) -> float:
    """Spawn -> the server has the first prompt, the prompt typed (one write, then Enter)
    the moment ``shown`` (the prompt box's mark) is on screen: how soon a user who types
    at once is answered. Keys typed before the program reads them wait in the terminal."""
    from tests.doubles.fake_llm import Reply

    from .bench_headless import RequestClock

    server.reset()
    server.enqueue(*[Reply.text("hello")] * 8)  # side requests (titles...) get an answer too
    clock = RequestClock(server)
    term = PtyProcess(argv, cwd, env)
    try:
        term.shown_text_after(shown, 0, timeout=60)
        term.write("say hello\r")
        if not server.wait_for_requests(1, timeout=60):
            raise TimeoutError(f"{argv[0]}: the prompt never reached the server; last output: {term.tail(600)!r}")
        time.sleep(0.05)  # the request clock's thread records it
    finally:
        clock.stop()
        term.kill()
    return clock.times[0] - term.started


def measure_startup_echo(argv: Sequence[str], cwd: Path, env: dict[str, str], shown: str,
                         keys: int = 12) -> list[float]:
    """Keys typed one by one from the moment ``shown`` is on screen, through start-up:
    milliseconds from each key to its echo."""
    term = PtyProcess(argv, cwd, env)
    letters = unique_keys()
    try:
        term.shown_text_after(shown, 0, timeout=60)
        return [echo(term, next(letters), delay=0.03) for _ in range(keys)]
    finally:
        term.kill()


def accept_claude_first_run(home: Path, workspace: Path, api_key: str) -> None:
    """Claude Code's first-run screens (theme, the API key, trusting the folder) answered
    in its config, as for anyone who has run it once."""
    import json

    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {str(workspace): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}}}))
