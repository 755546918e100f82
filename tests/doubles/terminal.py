"""A real terminal for end-to-end tests: the installed `loom` in tmux, read with capture-pane.

Each `Terminal` runs its own tmux server (a private socket) so nothing else is touched;
tests type with `send-keys` and wait on what the screen shows.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer

LOOM = Path(sys.executable).with_name("loom")
TMUX = shutil.which("tmux") or "/usr/bin/tmux"


class Terminal:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        result = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        if result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "loom")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "loom", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "loom", "-l", text)

    def paste(self, text: str) -> None:
        """Deliver ``text`` as a bracketed paste, the way a terminal does for Ctrl+Shift+V."""
        self.tmux("set-buffer", "-b", "loom-paste", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "loom-paste", "-t", "loom")

    def resize(self, width: int, height: int) -> None:
        self.tmux("resize-window", "-t", "loom", "-x", str(width), "-y", str(height))

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")

    def wait_ready(self, model: str = "claude-sonnet-4-5", timeout: float = 60.0) -> str:
        """Wait until the prompt and the status bar (with the model) are on screen."""
        return self.wait_for(lambda s: "Ask Loom" in s and model in s, "the prompt and status bar", timeout)

    def ask(self, prompt: str) -> None:
        """Once the chat is ready, type ``prompt`` and send it."""
        self.wait_ready()
        self.type(prompt)
        self.keys("Enter")

    def close(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def terminal_env(tmp_path: Path, server: FakeLLMServer | None, *, api_key: str | None = "test",
                 **extra: str) -> dict[str, str]:
    """The environment `loom` runs with: the fake server, throwaway data and config folders."""
    env = {
        "LOOM_DATA_DIR": str(tmp_path / "data"), "LOOM_CONFIG_DIR": str(tmp_path / "config"),
        "LOOM_PROVIDER": "anthropic", "LOOM_MODEL": "claude-sonnet-4-5", "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", str(tmp_path)),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home"),  # never the caller's own ~/.claude
    }
    if server is not None:
        env["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
    if api_key is not None:
        env["ANTHROPIC_API_KEY"] = api_key
    if "XDG_RUNTIME_DIR" in os.environ:
        # The test process's own warm server (tests/conftest.py), as a user's `loom` finds
        # theirs: the chat is forked from it rather than importing Loom afresh each time.
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
    if os.environ.get("PYTHONPATH"):
        # A checkout tested with the venv of another one: `loom` must run this code.
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(extra)
    return env


def open_loom(cwd: Path, env: Mapping[str, str], *, args: Sequence[str] = (), width: int = 110,
              height: int = 40, wrapper: Sequence[str] = ()) -> Terminal:
    """Start `loom ARGS` in ``cwd`` in a fresh tmux server of the given size (``wrapper``:
    a command line put in front, e.g. :data:`tests.doubles.no_sandbox.WITHOUT_SANDBOX`).

    The pane stays open 30 s after loom exits, so a test can read what it left on screen.
    """
    assert LOOM.exists(), f"the installed loom command is missing: {LOOM}"
    term = Terminal(f"loom-e2e-{uuid.uuid4().hex[:8]}")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    argv = " ".join(shlex.quote(a) for a in (*wrapper, str(LOOM), *args))
    command = f"cd {shlex.quote(str(cwd))} && env -i {exports} {argv}; sleep 30"
    term.tmux("-f", "/dev/null", "new-session", "-d", "-s", "loom", "-x", str(width), "-y", str(height), command)
    return term


@contextmanager
def loom_in_tmux(cwd: Path, env: Mapping[str, str], *, args: Sequence[str] = (), width: int = 110,
                 height: int = 40) -> Iterator[Terminal]:
    """`open_loom`, closed again when the block ends."""
    term = open_loom(cwd, env, args=args, width=width, height=height)
    try:
        yield term
    finally:
        term.close()


def drawn_to_the_edge(screen: str) -> bool:
    """The chat's drawing fits the window: the prompt box's right corner is on the screen.
    After a window narrows, tmux cuts the wider drawing off at the new edge until the chat
    redraws; a test that reads the narrow screen waits for this first."""
    rows = [row.strip() for row in screen.splitlines()]
    # Textual can draw a box at the new width a frame before its text is wrapped again,
    # so the text runs over the right edge; the drawing is done when every box row closes.
    return (any(row.endswith("╮") for row in rows)
            and all(row.endswith("│") for row in rows if row.startswith("│")))
