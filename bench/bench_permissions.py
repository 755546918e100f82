"""The permission check of one long bash line: 168 simple commands joined by `&&`, `;`
and pipes (ls, cat, grep, head, wc, echo over 28 files of a git workspace), as the
agent's bash tool asks it before running anything. Issue 21 sets <= 10 ms.

Timed in process (the check is a function, not a program); the median and the fastest
of the runs are shown with the load average, since the machine's load moves them.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNS = 25
SIMPLE_COMMANDS = 168


def long_line(files: int) -> str:
    """``SIMPLE_COMMANDS`` simple commands, six per file, joined the three ways."""
    groups = []
    for i in range(SIMPLE_COMMANDS // 6):
        f = f"src/module_{i % files}.py"
        groups.append(f"ls {f} && cat {f} | grep -n def; head -n 5 {f} | wc -l && echo step {i}")
    return "; ".join(groups)


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def run() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from loom_engine.permissions.layers import RuleLayer
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.permissions.shell import analyze
    from loom_engine.permissions.targets import CommandRun
    from loom_engine.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        (root / "src").mkdir(parents=True)
        files = SIMPLE_COMMANDS // 6
        for i in range(files):
            (root / "src" / f"module_{i}.py").write_text(f"def f{i}():\n    return {i}\n")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        rules = RuleLayer("bench", allow=("bash(npm test:*)", "read(docs/**)"),
                          deny=("read(.env)", "read(secrets/**)"), ask=("edit(pyproject.toml)",))
        manager = PermissionManager(Workspace.at(root), layers=[rules])
        line = long_line(files)
        counted = len(analyze(line).commands)
        if counted != SIMPLE_COMMANDS:
            raise RuntimeError(f"the line has {counted} simple commands, not {SIMPLE_COMMANDS}")
        target = CommandRun(line, str(root))
        decision = manager.check("bash", target, is_read_only=False)
        if decision.behavior != "allow":
            raise RuntimeError(f"the line should be allowed: {decision.reason}")
        times, cpu = [], []
        for _ in range(RUNS):
            started, used = time.perf_counter(), time.process_time()
            manager.check("bash", target, is_read_only=False)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
    median = statistics.median(times)
    load = os.getloadavg()[0]
    return [
        row(f"bash line of {SIMPLE_COMMANDS} simple commands: permission check (median of {RUNS})", median, "ms",
            "<= 10", median <= 10),
        row(f"  fastest of the {RUNS} (load average {load:.1f})", min(times), "ms"),
        row("  CPU time of one check (median)", statistics.median(cpu), "ms"),
    ]


if __name__ == "__main__":
    for r in run():
        print(r)
