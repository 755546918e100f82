"""Engine benchmarks: per-turn overhead early vs late, event throughput, parallel tools,
start-up, and the peak memory of a 1,000-turn session. Ratios, measured side by side."""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Finished
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.tools.function_tool import tool
from loom_engine.workspace import Workspace


@tool(read_only=True)
async def noop(n: int) -> str:
    """Return n."""
    return str(n)


@tool(read_only=True)
async def nap(seconds: float) -> str:
    """Sleep."""
    await asyncio.sleep(seconds)
    return "ok"


def _long_session(turns: int, text: str = "thinking...") -> ScriptedProvider:
    def turn(request: Any, index: int) -> dict[str, Any]:
        if index >= turns:
            return {"text": "done"}
        return {"text": text, "tool_calls": [{"name": "noop", "input": {"n": index}}]}
    return ScriptedProvider(turn)


def _agent(provider: Any, root: Path, tools: list[Any], **config: Any) -> Agent:
    return Agent(AgentConfig(model="scripted", provider="scripted", loop_guard=0, **config),
                 AgentParts(provider=provider, tools=tools, workspace=Workspace.at(root)), system_prompt="bench")


async def _turn_times(root: Path, turns: int) -> tuple[list[float], int, float]:
    agent = _agent(_long_session(turns), root, [noop], max_turns=turns + 5)
    stamps: list[float] = []
    events = 0
    started = time.perf_counter()
    async for event in agent.run("go"):
        events += 1
        if event.type == "turn_started":
            stamps.append(time.perf_counter())
        if isinstance(event, Finished):
            break
    total = time.perf_counter() - started
    return [b - a for a, b in itertools.pairwise(stamps)], events, total


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # Turns 10-60 (after warm-up) against turns 490-540, three sessions, median ratio.
        ratios, earlies, rates = [], [], []
        for _ in range(3):
            durations, events, total = asyncio.run(_turn_times(root, 600))
            early = statistics.median(durations[10:60])
            ratios.append(statistics.median(durations[490:540]) / early)
            earlies.append(early)
            rates.append(events / total)
        ratio, early = statistics.median(ratios), statistics.median(earlies)
        rows.append(dict(benchmark="per-turn overhead, turn ~500 / turn ~10 (medians)", value=ratio,
                         unit="x", target="< 1.2", ok=ratio < 1.2))
        rows.append(dict(benchmark="per-turn engine overhead (early turns)", value=early * 1e3, unit="ms",
                         target="report", ok=None))
        rows.append(dict(benchmark="events through the engine", value=statistics.median(rates), unit="events/s",
                         target="report", ok=None))

        async def parallel() -> float:
            provider = ScriptedProvider([
                {"tool_calls": [{"name": "nap", "input": {"seconds": 1.0}} for _ in range(10)]},
                {"text": "done"}])
            agent = _agent(provider, root, [nap])
            started = time.perf_counter()
            async for _ in agent.run("nap"):
                pass
            return time.perf_counter() - started
        wall = asyncio.run(parallel())
        rows.append(dict(benchmark="10 safe tools sleeping 1 s each: wall time", value=wall, unit="s",
                         target="close to 1 s (< 1.3)", ok=wall < 1.3))

        async def memory() -> float:
            tracemalloc.start()
            agent = _agent(_long_session(1000), root, [noop], max_turns=1100)
            async for _ in agent.run("go"):
                pass
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            return peak / 2**20
        rows.append(dict(benchmark="peak traced memory, 1,000-turn session", value=asyncio.run(memory()),
                         unit="MiB", target="report", ok=None))

    rows.extend(_startup_rows())
    return rows


def _startup_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "loom_cli", "--version"], capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    bare = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True)
        bare.append(time.perf_counter() - started)
    rows.append(dict(benchmark="`loom --version` start-up (median of 5)", value=statistics.median(times),
                     unit="s", target=f"report (bare python: {statistics.median(bare):.3f} s)", ok=None))
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.doubles.fake_llm import FakeLLMServer, Reply
    except ImportError:
        return rows
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        first = []
        for _ in range(3):
            server.enqueue(Reply.text("ok"))
            before = len(server.requests)
            env = {**os.environ, "ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": server.anthropic_base_url,
                   "LOOM_DATA_DIR": tmp, "LOOM_CONFIG_DIR": tmp, "LOOM_PROVIDER": "anthropic"}
            started = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "loom_cli", "run", "hi"], cwd=tmp, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while len(server.requests) == before and proc.poll() is None:
                time.sleep(0.002)
            first.append(time.perf_counter() - started)
            proc.wait()
        rows.append(dict(benchmark="`loom run` until the first request reaches the server", unit="s",
                         value=statistics.median(first), target="report", ok=None))
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(run())
