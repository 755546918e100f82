"""Start-up with telemetry off and on: `loom run` spawn -> first request, side by side.

Off must cost nothing (the OpenTelemetry SDK is not imported; compare the row with the
same number of a build before telemetry existed by running this from that checkout's
bench_headless). On adds the SDK's import and the exporters' set-up, which this shows.
``BENCH_BASELINE_ROOT`` (a checkout of another build, e.g. main) adds that build's row.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.bench_headless import ROOT, RUNS, TASK, _loom_env, _workspace, median, row, timed_run


def run() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.doubles.fake_llm import FakeLLMServer, Reply
    from tests.doubles.otlp_receiver import OtlpReceiver

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp_name, FakeLLMServer() as server, OtlpReceiver() as receiver:
        tmp = Path(tmp_name)
        repo = _workspace(tmp)
        argv = [sys.executable, "-m", "loom_cli", "run", TASK]
        off = _loom_env(tmp, server)
        on = {**off, "LOOM_ENABLE_TELEMETRY": "1", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
              "OTEL_LOGS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
              "NO_PROXY": "127.0.0.1"}
        variants = {"off": off, "on (OTLP/HTTP, 3 signals)": on}
        baseline = os.environ.get("BENCH_BASELINE_ROOT")
        if baseline:
            variants["baseline build " + baseline] = {**off, "PYTHONPATH": baseline}
        reply = [Reply.text("hello")]
        for env in variants.values():
            timed_run(argv, repo, env, server, reply)  # a warm file cache
        firsts: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(RUNS):  # interleaved, so a busy moment of the machine hits every variant
            for name, env in variants.items():
                timing = timed_run(argv, repo, env, server, reply)
                if timing.code != 0:
                    raise RuntimeError(f"loom run ({name}) exited {timing.code}")
                firsts[name].append(timing.first_request_s)
        for name, values in firsts.items():
            rows.append(row(f"python -m loom_cli run, telemetry {name}: spawn -> first request (median of {RUNS})",
                            median(values) * 1000, "ms"))
        ratio = median(firsts["on (OTLP/HTTP, 3 signals)"]) / median(firsts["off"])
        rows.append(row("spawn -> first request: telemetry on / off", ratio, "x"))
        if baseline:
            base = median(firsts["baseline build " + baseline])
            off_ratio = median(firsts["off"]) / base
            rows.append(row("spawn -> first request: telemetry off / baseline build", off_ratio, "x", "<= 1.05",
                            off_ratio <= 1.05))
    return rows
