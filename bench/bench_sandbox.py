"""The OS sandbox: what it adds to a trivial command, and the questions it saves.

Rows: the median time of `true` through the real bash tool (``BashTool.run``: the cwd
file, the process group, the clean-up), unconfined and inside the sandbox, measured in
one run with the two sides alternating so that the machine's load hits both alike;
the difference has issue 19's target (at most 40 ms more). The Landlock fallback is
reported beside it (no target: it starts a Python launcher). Then the bash corpus of
``tests/security`` in accept-edits: how many of its lines ask today, and how many
still ask when they run confined. Run with ``python -m bench bench_sandbox``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

REPEATS = 31
EXTRA_TARGET_MS = 40.0


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


async def _command_times(root: Path) -> tuple[dict[str, list[float]], dict[str, str]]:
    from builtin_tools.bash import BashInput, BashTool
    from loom_engine.execution import CancelToken
    from loom_engine.sandbox import Machine, SandboxConfig, open_sandbox
    from loom_engine.tools.base import ToolContext, ToolSessionState
    from loom_engine.workspace import Workspace

    workspace = Workspace.at(root)
    sides: dict[str, Any] = {"unconfined": None}
    details: dict[str, str] = {}
    for backend in ("bubblewrap", "landlock"):
        sandbox = open_sandbox(SandboxConfig(), workspace, machine=Machine(backends=(backend,)))
        details[backend] = sandbox.status.detail or sandbox.status.reason
        if sandbox.active:
            sides[backend] = sandbox
    tool, args = BashTool(), BashInput(command="true")
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(REPEATS + 1):
        for name, sandbox in sides.items():
            ctx = ToolContext(workspace=workspace, cancel=CancelToken(), state=ToolSessionState(), sandbox=sandbox)
            started = time.perf_counter()
            out = await tool.run(args, ctx)
            times[name].append((time.perf_counter() - started) * 1000)
            if out.is_error:
                raise RuntimeError(f"`true` failed ({name}): {out.content}")
    for sandbox in sides.values():
        if sandbox is not None:
            sandbox.close()
    return {name: values[1:] for name, values in times.items()}, details  # the first round warms up


def _corpus_questions(root: Path) -> tuple[int, int, int]:
    """(lines, asked today in accept-edits, still asked when confined)."""
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.permissions.targets import CommandRun, Confinement
    from loom_engine.workspace import Workspace
    from tests.security.test_shell_parser import ATTACKS

    manager = PermissionManager(Workspace.at(root), mode="accept-edits")

    def asks(confinement: Confinement | None) -> int:
        return sum(manager.check("bash", CommandRun(line, str(root), confinement), is_read_only=False).behavior
                   == "ask" for line, _ in ATTACKS)

    return len(ATTACKS), asks(None), asks(Confinement("off"))


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(os.path.realpath(scratch)) / "repo"
        (root / ".git" / "hooks").mkdir(parents=True)
        (root / ".git" / "config").write_text("[core]\n")
        (root / "src").mkdir()
        times, details = asyncio.run(_command_times(root))
        load = os.getloadavg()[0]
        lines, before, after = _corpus_questions(root)
    plain = median(times["unconfined"])
    rows = [row("`true` through the bash tool, unconfined (median of 31)", plain, "ms")]
    for backend in ("bubblewrap", "landlock"):
        if backend not in times:
            rows.append(row(f"  {backend}: not measured", details[backend], ""))
            continue
        confined = median(times[backend])
        extra = confined - plain
        target = f"<= +{EXTRA_TARGET_MS:.0f}" if backend == "bubblewrap" else ""
        fastest = min(times[backend]) - min(times["unconfined"])
        rows += [row(f"  inside {details[backend]} (median of 31)", confined, "ms"),
                 row(f"  {backend}: added per command", extra, "ms", target,
                     extra <= EXTRA_TARGET_MS if backend == "bubblewrap" else None),
                 row(f"  {backend}: added, fastest against fastest (the machine's noise floor)", fastest, "ms")]
    rows += [row("  cores; load average while measuring", f"{os.cpu_count() or 1}; {load:.1f}", ""),
             row(f"bash corpus ({lines} lines), accept-edits: questions today", float(before), ""),
             row("  questions left when the commands run confined", float(after), ""),
             row("  questions removed", float(before - after), "")]
    return rows
