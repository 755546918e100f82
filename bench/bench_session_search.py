"""Session search (issue 24 §2): 1,000 realistic sessions written the way Loom writes them,
the index built from them, and queries over it.

Rows: the build (every session read, redacted and indexed), the index's size on disk, a
catch-up when nothing changed (what each `loom sessions search` does before its query),
query latency (median and p95 over several kinds of query: rare and common words,
several words, part of a path, a prefix as typed in /resume), the whole `loom sessions
search` process, plus whether a planted session comes first. Target: a query in well
under 100 ms. ``BENCH_SESSIONS=10000`` runs it at another size. Run with ``python -m bench bench_session_search``.
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median, quantiles
from typing import Any

SESSIONS = int(os.environ.get("BENCH_SESSIONS", "1000"))
QUERY_TARGET_MS = 100.0
QUERIES = ("migration", "test", "fix the flaky", "websocket reconnect buffer", "ig_load", "pars",
           "timeout retry backoff", "README", "quasar lighthouse")

_TOPICS = ("parser", "migration", "websocket", "cache", "login", "checkout", "logging", "retry", "config",
           "scheduler", "timeout", "database", "upload", "search", "billing", "queue", "cli", "docs")
_VERBS = ("fix", "add", "refactor", "explain", "speed up", "test", "remove", "rename", "document", "debug")
_FILLER = ("the function now checks its input before use", "I read the module and the tests around it",
           "the failure came from an off-by-one in the loop", "the old code swallowed the exception",
           "tests pass locally after the change", "the fix keeps the public interface as it was",
           "a retry with backoff covers the flaky network call", "the config loader read the wrong key")


def _exchange(rng: random.Random, number: int) -> Any:
    from tests.doubles.saved_sessions import Exchange

    topic = rng.choice(_TOPICS)
    folder = rng.choice(("src", "lib", "app", "tests"))
    path = f"{folder}/{topic}/{rng.choice(('core', 'util', 'config_loader', 'handlers'))}_{number % 7}.py"
    prompt = f"{rng.choice(_VERBS)} the {topic} {rng.choice(('bug', 'code', 'tests', 'timeout', 'module'))}"
    answer = ". ".join(rng.choice(_FILLER) for _ in range(rng.randint(4, 12))) + f". Changed {path}."
    tools = [("read_file", {"path": path}), ("grep", {"pattern": topic, "path": folder}),
             ("edit_file", {"path": path, "old_string": "x", "new_string": "y"}),
             ("bash", {"command": f"pytest -q tests/test_{topic}.py"})]
    return Exchange(prompt, answer=answer, tools=tools[:rng.randint(1, 4)])


def write_sessions(root: Path, count: int, projects: Sequence[str] = ()) -> str:
    """``count`` sessions over ``projects`` (20 made-up ones by default); returns the id
    of one planted rare session."""
    from tests.doubles.saved_sessions import Exchange, save_session

    rng = random.Random(24)
    planted = ""
    for number in range(count):
        project = projects[number % len(projects)] if projects else f"/home/dev/projects/repo{number % 20}"
        exchanges = [_exchange(rng, number + turn) for turn in range(rng.randint(3, 10))]
        if number == count // 2:
            exchanges.insert(1, Exchange("the quasar lighthouse service drops requests",
                                         answer="The quasar lighthouse pool was too small."))
        writer = save_session(root, project, exchanges)
        if number == count // 2:
            planted = writer.id
    return planted


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def _ms(action: Any) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def _cpu_ms(action: Any) -> float:
    """The CPU time ``action`` took, this process's and its children's: on a busy machine
    wall time measures the machine, this measures Loom."""
    def used() -> float:
        mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime

    started = used()
    action()
    return (used() - started) * 1000


def _cli(data: Path, query: str) -> None:
    """``loom sessions search QUERY`` as a user runs it, over data folder ``data``."""
    environment = {**os.environ, "LOOM_DATA_DIR": str(data)}
    subprocess.run([sys.executable, "-m", "loom_cli", "sessions", "search", query], env=environment,
                   stdout=subprocess.DEVNULL, check=True)


def run() -> list[dict[str, Any]]:
    from loom_engine.index.session_index import SessionIndex

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        planted = write_sessions(base / "sessions", SESSIONS)
        index = SessionIndex(base / "index" / "search.db", base / "sessions")
        build_ms = _ms(index.catch_up)
        size = sum(p.stat().st_size for p in index.db_path.parent.iterdir() if p.name.startswith("search.db"))
        nothing_new = [_ms(index.catch_up) for _ in range(5)]
        times: list[float] = []
        cpu: list[float] = []
        for _ in range(5):
            for query in QUERIES:
                def search(q: str = query) -> None:
                    index.search(q, refresh=False, as_you_type=q == "pars")
                times.append(_ms(search))
                cpu.append(_cpu_ms(search))
        full = [_ms(lambda: index.search("fix the flaky")) for _ in range(5)]
        full_cpu = [_cpu_ms(lambda: index.search("fix the flaky")) for _ in range(5)]
        first = index.search("quasar lighthouse", refresh=False)
        whole = [_ms(lambda: _cli(base, "fix the flaky")) for _ in range(3)]
        whole_cpu = [_cpu_ms(lambda: _cli(base, "fix the flaky")) for _ in range(3)]
        p95 = quantiles(times, n=20)[-1]
        label = f"{SESSIONS:,} sessions"
        return [
            row(f"build the index of {label}", build_ms / 1000, "s"),
            row(f"index size ({label})", size / 1_000_000, "MB"),
            row("catch-up, nothing new (stat of every file)", median(nothing_new), "ms"),
            row(f"query median ({len(QUERIES)} kinds x5)", median(times), "ms", f"< {QUERY_TARGET_MS:g} ms",
                median(times) < QUERY_TARGET_MS),
            row("query p95", p95, "ms", f"< {QUERY_TARGET_MS:g} ms", p95 < QUERY_TARGET_MS),
            row("query CPU time median / p95", f"{median(cpu):.1f} / {quantiles(cpu, n=20)[-1]:.1f}", "ms"),
            row("`loom sessions search` (catch-up + query) median", median(full), "ms", f"< {QUERY_TARGET_MS:g} ms",
                median(full) < QUERY_TARGET_MS),
            row("  its CPU time median", median(full_cpu), "ms"),
            row("`loom sessions search`, whole process (start-up included) median", median(whole), "ms"),
            row("  its CPU time median", median(whole_cpu), "ms"),
            row("the planted session ranks first", "yes" if first and first[0].session_id == planted else "no", "",
                "yes", bool(first) and first[0].session_id == planted),
        ]
