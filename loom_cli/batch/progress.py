"""What `loom batch` shows while it runs, on standard error: on a terminal a live panel
(done / running / failed, cost so far, ETA, a line per running task); otherwise a plain
line per task started and finished, for logs and CI."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from ..usage_limits import span
from ..visible_text import visible
from .results import TaskResult

if TYPE_CHECKING:
    from rich.console import RenderableType


class Progress(Protocol):
    def started(self, task_id: str, prompt: str) -> None: ...

    def finished(self, result: TaskResult) -> None: ...

    def note(self, text: str) -> None:
        """A line about the whole batch (stopping, the budget spent)."""

    def close(self) -> None: ...


@dataclass
class Tally:
    """The counts both displays show, for this run's tasks (``earlier``: finished before)."""

    total: int
    earlier: int = 0
    done: int = 0
    failed: int = 0
    stopped: int = 0
    cost_usd: float = 0.0
    running: dict[str, tuple[float, str]] = field(default_factory=dict)  # id: (since, prompt)
    clock: Callable[[], float] = time.monotonic
    began: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.began = self.clock()

    @property
    def ended(self) -> int:
        return self.done + self.failed + self.stopped

    def finish(self, result: TaskResult) -> None:
        self.running.pop(result.id, None)
        self.cost_usd += result.cost_usd
        if result.status == "done":
            self.done += 1
        elif result.status == "failed":
            self.failed += 1
        else:
            self.stopped += 1

    def eta_s(self) -> float | None:
        """The time left at this run's pace so far (None before a task has ended)."""
        if not self.ended:
            return None
        per_task = (self.clock() - self.began) / self.ended
        return per_task * (self.total - self.ended)

    def headline(self) -> str:
        eta = self.eta_s()
        parts = [f"{self.done + self.earlier}/{self.total + self.earlier} done", f"{len(self.running)} running",
                 f"{self.failed} failed", *([f"{self.stopped} stopped"] if self.stopped else []),
                 f"${self.cost_usd:.2f}", *([f"ETA {span(eta)}"] if eta is not None and self.running else [])]
        return " · ".join(parts)


def _first_line(text: str) -> str:
    return visible(" ".join(text.split()))


class PlainProgress:
    """A line per event, nothing redrawn."""

    def __init__(self, tally: Tally, err: TextIO) -> None:
        self.tally, self._err = tally, err

    def _say(self, line: str) -> None:
        self._err.write(f"loom batch: {line}\n")
        self._err.flush()

    def started(self, task_id: str, prompt: str) -> None:
        self.tally.running[task_id] = (self.tally.clock(), prompt)
        self._say(f"started {task_id}")

    def finished(self, result: TaskResult) -> None:
        self.tally.finish(result)
        said = f"{result.status} {result.id} in {span(result.duration_s, with_seconds=True)}, ${result.cost_usd:.4f}"
        if result.error:
            said += f": {_first_line(result.error)}"
        self._say(f"{said} ({self.tally.headline()})")

    def note(self, text: str) -> None:
        self._say(text)

    def close(self) -> None:
        pass


class LiveProgress:
    """The live panel (rich), redrawn four times a second; what it last showed stays."""

    def __init__(self, tally: Tally, err: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        self.tally = tally
        self._notes: list[str] = []
        self._echo = _EchoOff(err)
        self._console = Console(file=err, highlight=False)
        self._live = Live(get_renderable=self._render, console=self._console, refresh_per_second=4,
                          transient=False, redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def _render(self) -> RenderableType:
        return panel(self.tally, self._notes)

    def started(self, task_id: str, prompt: str) -> None:
        self.tally.running[task_id] = (self.tally.clock(), prompt)
        self._live.refresh()

    def finished(self, result: TaskResult) -> None:
        self.tally.finish(result)
        if result.status != "done":  # a failure is kept above the panel, where it stays readable
            mark = "✗" if result.status == "failed" else "■"
            said = f"{mark} {result.status} {visible(result.id)}: {_first_line(result.error or '')}"
            self._live.console.print(said, style="red" if result.status == "failed" else "yellow",
                                     no_wrap=True, overflow="ellipsis", markup=False)
        self._live.refresh()

    def note(self, text: str) -> None:
        self._notes.append(text)
        self._live.refresh()

    def close(self) -> None:
        self._live.stop()
        self._echo.restore()


class _EchoOff:
    """The terminal's echo off while the panel is drawn: a key typed, or the ``^C`` a Ctrl+C
    echoes, would move the cursor under the panel, and the next redraw would leave a stale
    copy of it behind. Restored when the panel closes."""

    def __init__(self, terminal: TextIO) -> None:
        import termios

        self._saved: list[Any] | None = None
        try:
            self._fd = terminal.fileno()
            self._saved = termios.tcgetattr(self._fd)
            quiet = termios.tcgetattr(self._fd)
            quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)
            termios.tcsetattr(self._fd, termios.TCSANOW, quiet)
        except (OSError, ValueError, termios.error):  # not a terminal after all: nothing to do
            self._saved = None

    def restore(self) -> None:
        import termios

        if self._saved is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)
            self._saved = None


def panel(tally: Tally, notes: Sequence[str] = ()) -> RenderableType:
    """The live panel: the totals, a line per running task (its id, time so far, prompt),
    then the notes; each line cut to the terminal's width, never wrapped."""
    from rich.console import Group
    from rich.text import Text

    # No "loom batch:" before it, as the plain lines have: the command is on the line above,
    # and at 60 columns the cost and ETA would be cut off.
    lines = [Text(tally.headline(), style="bold", no_wrap=True, overflow="ellipsis")]
    now = tally.clock()
    for task_id, (since, prompt) in list(tally.running.items()):
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"  ▸ {visible(task_id)}", style="cyan")
        line.append(f"  {span(now - since, with_seconds=True):>7}  ", style="dim")
        line.append(_first_line(prompt))
        lines.append(line)
    lines += [Text(note, style="yellow", no_wrap=True, overflow="ellipsis") for note in notes]
    return Group(*lines)


def make_progress(tally: Tally, err: TextIO) -> Progress:
    isatty = getattr(err, "isatty", None)
    return LiveProgress(tally, err) if callable(isatty) and isatty() else PlainProgress(tally, err)
