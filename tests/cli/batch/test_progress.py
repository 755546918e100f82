"""The progress panel's lines: totals, cost, ETA, a line per running task cut to the width."""

from __future__ import annotations

import io

from rich.console import Console

from loom_cli.batch.progress import Tally, panel
from loom_cli.batch.results import TaskResult


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def shown(tally: Tally, width: int, notes: tuple[str, ...] = ()) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(panel(tally, notes))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return text.splitlines()


def test_the_panel_counts_costs_and_estimates_the_rest() -> None:
    clock = Clock()
    tally = Tally(total=4, earlier=1, clock=clock)
    tally.running["t1"] = (100.0, "Fix the parser\nso that it handles tabs")
    tally.running["t2"] = (100.0, "Rename the module")
    assert shown(tally, 120)[0] == "1/5 done · 2 running · 0 failed · $0.00"  # no ETA before an end
    clock.now = 130.0
    tally.finish(TaskResult("t2", "done", cost_usd=0.5))
    tally.running["t3"] = (130.0, "Add a test")
    clock.now = 135.0
    assert shown(tally, 120) == ["2/5 done · 2 running · 0 failed · $0.50 · ETA 1m 45s",
                                 "  ▸ t1      35s  Fix the parser so that it handles tabs",
                                 "  ▸ t3       5s  Add a test"]


def test_at_60_columns_each_line_is_cut_not_wrapped() -> None:
    tally = Tally(total=3, clock=Clock())
    tally.running["migrate-the-settings-loader"] = (100.0, "Move every settings reader onto the new loader " * 3)
    lines = shown(tally, 60, ("stopping: the running tasks end their sessions (Ctrl+C again to end at once)",))
    assert len(lines) == 3 and all(len(line) <= 60 for line in lines)
    assert lines[1].startswith("  ▸ migrate-the-settings-loader       0s  Move every") and lines[1].endswith("…")
    assert lines[2].endswith("…")
