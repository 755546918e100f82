"""Workspace snapshots (rewind): what one costs in a 10,000-file repository, and how big
the shadow repository grows.

Rows: the first snapshot (every file hashed), a snapshot when nothing changed (target
under 50 ms: it is taken before every prompt and after every bash call), one when one
file changed, a restore preview of one changed file, and the shadow repository's size
after 100 prompts that each change a few files. Run with ``python -m bench bench_snapshots``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

FILES = 10_000
PROMPTS = 100
NO_CHANGE_TARGET_MS = 50.0


def make_repository(root: Path) -> None:
    """10,000 source-like files in 100 folders, committed (the user's own repository)."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for number in range(FILES):
        folder = root / f"pkg{number // 100:03d}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"def function_{number}_{line}(x):\n    return x * {line} + {number}\n\n"
                       for line in range(12))
        (folder / f"module_{number:05d}.py").write_text(body)
    (root / ".gitignore").write_text("__pycache__/\n")


def _times(action: Any, repeat: int) -> list[float]:
    """Milliseconds of each of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _timed(action: Any, repeat: int) -> float:
    """Median milliseconds of ``repeat`` calls."""
    return median(_times(action, repeat))


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def run() -> list[dict[str, Any]]:
    from loom_engine.snapshots.checkpoints import Checkpointer
    from loom_engine.snapshots.restore import plan_restore

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        repo = base / "repo"
        make_repository(repo)
        checkpointer = Checkpointer(repo, base / "data" / "snapshots")
        started = time.perf_counter()
        first = checkpointer.snapshot("prompt", prompt_id="p0", prompt_text="first")
        first_ms = (time.perf_counter() - started) * 1000
        checkpointer.snapshot("tool")  # settles the index's stat data (racy entries)
        unchanged_times = _times(lambda: checkpointer.snapshot("tool"), 15)
        unchanged, fastest = median(unchanged_times), min(unchanged_times)
        load = os.getloadavg()[0]
        target = repo / "pkg000" / "module_00000.py"
        counter = [0]

        def one_change() -> None:
            counter[0] += 1
            with open(target, "a") as handle:
                handle.write(f"# change {counter[0]}\n")
            checkpointer.snapshot("tool")

        changed = _timed(one_change, 15)
        preview = _timed(lambda: plan_restore(checkpointer, first), 5)
        size_start = checkpointer.repo.size_bytes()
        for prompt in range(PROMPTS):
            checkpointer.snapshot("prompt", prompt_id=f"p{prompt + 1}", prompt_text=f"prompt {prompt + 1}")
            for edit in range(3):  # each prompt changes three files a little
                path = repo / f"pkg{(prompt * 3 + edit) % 100:03d}" / f"module_{(prompt * 3 + edit) * 7 % FILES:05d}.py"
                if not path.exists():
                    path = target
                with open(path, "a") as handle:
                    handle.write(f"# prompt {prompt} edit {edit}\n")
            checkpointer.snapshot("tool")
            checkpointer.snapshot("run_end")
        size_end = checkpointer.repo.size_bytes()
        from loom_engine.messages import Message
        from loom_engine.snapshots.restore import restore_points

        prompts = [Message(role="user", parts=Message.user(f"prompt {n}").parts, id=f"p{n}")
                   for n in range(PROMPTS + 1)]
        points_ms = _timed(lambda: restore_points(checkpointer, prompts), 3)
        oldest = next(s for s in checkpointer.snapshots() if s.kind == "prompt")  # older ones were pruned
        far_preview = _timed(lambda: plan_restore(checkpointer, oldest), 3)
        workspace_bytes = sum(p.stat().st_size for p in repo.rglob("*.py"))
        loose = sum(1 for _ in (checkpointer.git_dir / "objects").glob("[0-9a-f][0-9a-f]/*"))
        packs = sum(1 for _ in (checkpointer.git_dir / "objects" / "pack").glob("*.pack"))
        cpu = os.cpu_count() or 1
    return [
        row(f"{FILES:,} files: first snapshot (every file hashed)", first_ms, "ms"),
        row("  snapshot, nothing changed (median of 15)", unchanged, "ms", f"< {NO_CHANGE_TARGET_MS:.0f}",
            unchanged < NO_CHANGE_TARGET_MS),
        row("  snapshot, nothing changed: fastest of 15 (the machine's noise floor)", fastest, "ms"),
        row("  snapshot, one file changed (median of 15)", changed, "ms"),
        row("  restore preview of one changed file (median of 5)", preview, "ms"),
        row(f"  list of {PROMPTS + 1} restore points with their files (median of 3)", points_ms, "ms"),
        row(f"  preview of going back {PROMPTS - 1} prompts (median of 3)", far_preview, "ms"),
        row("  workspace's files", workspace_bytes / 1e6, "MB"),
        row("  shadow repository after the first snapshot", size_start / 1e6, "MB"),
        row(f"  shadow repository after {PROMPTS} prompts (3 files changed each)", size_end / 1e6, "MB"),
        row("  loose objects; packs", f"{loose}; {packs}", ""),
        row("  cores; load average while measuring", f"{cpu}; {load:.1f}", ""),
    ]
