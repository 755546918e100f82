"""TUI benchmarks. The real app first, from process start in a pseudo-terminal against the
fake LLM server (see real_tui.py): first frame, the first prompt's Enter -> request, key
echo during that request and while streaming, quitting. Then in-process (App.run_test,
a ReplayAgent from tests/doubles): streaming cost next to the stock `Markdown.append` in the same run,
keypress latency while streaming, a 200-turn session, and resuming one.

The stream is a 20 KB markdown answer (prose, lists, code fences) fed at 200 chunks/s on
the UI's own loop, the way the engine's events arrive. Event-loop lag is the overshoot
of a 10 ms sleep; CPU share is process CPU time over wall time.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from loom_engine.events import AgentEvent, AssistantMessage, Finished, TextDelta, ToolCallStarted, ToolFinished
from loom_engine.messages import Message, TextPart, ToolResultPart, ToolUsePart

if TYPE_CHECKING:
    from loom_cli.chat_agent import ChatAgent
    from loom_engine.attachments import UserPrompt

RATE = 200.0  # chunks per second
SIZE = (120, 40)
ROOT = Path(__file__).resolve().parent.parent


def markdown_answer(size: int = 20_000) -> str:
    """Prose, bullet and numbered lists, and python/json/bash fences, about ``size`` bytes."""
    parts: list[str] = []
    n = 0
    while sum(len(p) for p in parts) < size:
        n += 1
        parts.append(f"## Step {n}: tighten the retry loop\n\n")
        parts.append("The client retries on **429** and `5xx` answers with exponential backoff and jitter; "
                     "a stream that breaks after partial output restarts the turn, and the UI drops what it "
                     "showed. This keeps the transcript valid for both providers.\n\n")
        parts.append("- read the `retry-after` header when present\n- cap the delay at 30 seconds\n"
                     "- give up after five attempts and report a one-line error\n\n")
        parts.append(f"```python\nasync def fetch_{n}(client, request, attempts=5):\n"
                     "    for attempt in range(attempts):\n"
                     "        try:\n            return await client.send(request)\n"
                     "        except RateLimited as error:\n"
                     "            await asyncio.sleep(min(30, error.retry_after or 2 ** attempt))\n"
                     "    raise GaveUp(f\"{attempts} attempts\")\n```\n\n")
        parts.append("1. run the unit tests\n2. run the fake-server tests\n3. compare the numbers\n\n")
        if n % 3 == 0:
            parts.append('```json\n{"attempts": 5, "max_delay_s": 30, "jitter": true}\n```\n\n')
    return "".join(parts)[:size]


def chunks_of(text: str, count: int) -> list[str]:
    size = max(1, len(text) // count)
    return [text[i:i + size] for i in range(0, len(text), size)]


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Probe:
    """Samples event-loop lag: how late a 10 ms sleep wakes up."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.running = True

    async def lag_loop(self) -> None:
        while self.running:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            self.lags.append((time.perf_counter() - start - 0.01) * 1000)


async def feed(chunks: list[str], append: Any, rate: float = RATE) -> tuple[float, float]:
    """Append chunks on schedule; returns (achieved chunks/s, cpu share of a core)."""
    start = time.perf_counter()
    cpu = time.process_time()
    for index, chunk in enumerate(chunks):
        due = start + index / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        result = append(chunk)
        if asyncio.iscoroutine(result) or hasattr(result, "__await__"):
            await result
    elapsed = time.perf_counter() - start
    return len(chunks) / elapsed, (time.process_time() - cpu) / elapsed


# --- a fake agent feeding the real app -----------------------------------------------


class BenchStream:
    """What the benchmark's agent (a ReplayAgent) plays for each prompt: ``next_chunks``
    streamed at ``rate`` chunks a second, then the answer; ``stats`` the rate reached."""

    def __init__(self) -> None:
        self.next_chunks: list[str] = []
        self.rate = RATE
        self.stats: tuple[float, float] = (0.0, 0.0)
        self.tool_each_turn = False

    async def __call__(self, prompt: str | UserPrompt) -> AsyncIterator[AgentEvent]:
        start = time.perf_counter()
        cpu = time.process_time()
        for index, chunk in enumerate(self.next_chunks):
            delay = start + index / self.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            yield TextDelta(text=chunk)
        elapsed = time.perf_counter() - start
        self.stats = (len(self.next_chunks) / elapsed if elapsed else 0.0, (time.process_time() - cpu) / elapsed
                      if elapsed else 0.0)
        yield AssistantMessage(message=Message.assistant(TextPart("".join(self.next_chunks))))
        if self.tool_each_turn:
            yield ToolCallStarted(call_id=f"c{id(prompt)}", name="read_file", input={"path": "src/app.py"})
            yield ToolFinished(call_id=f"c{id(prompt)}", name="read_file", content="1\tx = 1\n2\ty = 2",
                               is_error=False, duration_ms=1.0)
        yield Finished(result="", num_turns=1)


def bench_agent(stream: BenchStream, workspace: Path, messages: tuple[Message, ...] = ()) -> ChatAgent:
    from tests.doubles.replay_agent import ReplayAgent

    return ReplayAgent(stream, workspace=workspace, model="bench-model", messages=messages, session_id="bench",
                       context=(1000, 200_000))


def loom_app(stream: BenchStream, workspace: Path, data: Path, **options: Any) -> Any:
    from loom_cli.tui.app import LoomApp, TuiOptions

    agent = bench_agent(stream, workspace)
    return LoomApp(TuiOptions(workspace=workspace, agent_factory=lambda _o: agent, data_dir=data, **options))


async def until(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.01)


async def stream_in_loom(stream: BenchStream, app: Any, chunks: list[str]) -> dict[str, float]:
    stream.next_chunks = chunks
    probe = Probe()
    lag_task = asyncio.create_task(probe.lag_loop())
    app.prompt.load_text("stream please")
    app.prompt.submit()
    await until(lambda: app.running)
    await until(lambda: not app.busy)
    probe.running = False
    await lag_task
    rate, cpu = stream.stats
    return {"rate": rate, "cpu": cpu, "p50": pct(probe.lags, 0.5), "p99": pct(probe.lags, 0.99)}


# --- scenarios -----------------------------------------------------------------------


async def ours_streaming(workspace: Path, data: Path, chunks: list[str]) -> dict[str, float]:
    stream = BenchStream()
    app = loom_app(stream, workspace, data)
    async with app.run_test(size=SIZE):
        await until(lambda: app.warm.is_set())
        await asyncio.sleep(0.3)
        return await stream_in_loom(stream, app, chunks)


class StockApp(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll(id="scroll"):
            yield Markdown(id="md")


async def stock_streaming(chunks: list[str]) -> dict[str, float]:
    app = StockApp()
    async with app.run_test(size=SIZE):
        md = app.query_one("#md", Markdown)
        app.query_one("#scroll", VerticalScroll).anchor()
        await asyncio.sleep(0.3)
        probe = Probe()
        lag_task = asyncio.create_task(probe.lag_loop())
        rate, cpu = await feed(chunks, md.append)
        probe.running = False
        await lag_task
        return {"rate": rate, "cpu": cpu, "p50": pct(probe.lags, 0.5), "p99": pct(probe.lags, 0.99)}


async def keypress_latency(workspace: Path, data: Path, chunks: list[str]) -> tuple[list[float], list[float]]:
    """Key event posted to the app -> the first frame written that shows the typed text."""
    stream = BenchStream()
    app = loom_app(stream, workspace, data)
    frames: list[tuple[float, str]] = []
    async with app.run_test(size=SIZE):
        await until(lambda: app.warm.is_set())
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            frames.append((time.perf_counter(), app.prompt.text))
            original(screen, renderable)

        app._display = display  # type: ignore[method-assign]

        async def measure(count: int) -> list[float]:
            samples = []
            for i in range(count):
                char = "abcdefghij"[i % 10]
                expected = app.prompt.text + char
                sent = time.perf_counter()
                app.post_message(events.Key(char, char))
                await until(lambda sent=sent, expected=expected: any(
                    t >= sent and text == expected for t, text in frames[-5:]), timeout=5)
                shown = next(t for t, text in frames if t >= sent and text == expected)
                samples.append((shown - sent) * 1000)
                await asyncio.sleep(0.03)
            return samples

        idle = await measure(30)
        app.prompt.load_text("")
        stream.next_chunks = chunks
        from loom_cli.tui.paste import Draft

        app.queue.append(Draft("stream"))
        app.send_queued()
        await until(lambda: app.running)
        await asyncio.sleep(0.3)
        busy = await measure(40)
        await until(lambda: not app.busy)
        return idle, busy


async def long_session(workspace: Path, data: Path, turns: int) -> dict[str, float]:
    """Lag while streaming at the start and after ``turns`` turns; memory growth."""
    stream = BenchStream()
    stream.tool_each_turn = True
    app = loom_app(stream, workspace, data)
    answer = markdown_answer(1000)
    probe_chunks = chunks_of(markdown_answer(5000), 200)
    from loom_cli.tui.paste import Draft
    async with app.run_test(size=SIZE):
        await until(lambda: app.warm.is_set())
        await asyncio.sleep(0.3)
        rss0 = rss_mb()
        first = await stream_in_loom(stream, app, probe_chunks)
        stream.rate = 10_000.0  # fill the session quickly
        for _ in range(turns):
            stream.next_chunks = chunks_of(answer, 20)
            app.queue.append(Draft("next"))
            app.send_queued()
            await until(lambda: not app.busy and not app.queue)
        stream.rate = RATE
        await asyncio.sleep(0.5)
        last = await stream_in_loom(stream, app, probe_chunks)
        return {"p99_first": first["p99"], "p99_last": last["p99"], "p50_last": last["p50"],
                "rss_growth": rss_mb() - rss0, "mounted": float(app.transcript.mounted_count),
                "entries": float(len(app.transcript.entries))}


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


# --- first frame (fresh processes) -----------------------------------------------------

_FIRST_FRAME = textwrap.dedent("""
    import time
    T0 = time.perf_counter()
    import asyncio, json, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from loom_cli.tui.app import LoomApp, TuiOptions
    import bench.bench_tui as b

    IMPORTED = []

    def factory(options):
        IMPORTED.append(time.perf_counter())
        from loom_cli.tui.options import default_history_loader
        return b.bench_agent(b.BenchStream(), options.workspace, tuple(default_history_loader(options)))

    async def main():
        app = LoomApp(TuiOptions(workspace=Path({workspace!r}), agent_factory=factory, data_dir=Path({data!r}),
                                 continue_session={resume}))
        async with app.run_test(size=(120, 40)):
            await b.until(lambda: app.loaded.is_set() and (not {resume} or app.history_shown_at))
            await asyncio.sleep(0.05)
        print(json.dumps({{"first_frame": app.first_frame_at - T0, "ready": IMPORTED[0] - T0,
                          "history": (app.history_shown_at - T0) if app.history_shown_at else None,
                          "loaded": (app.history_loaded_at - T0) if app.history_loaded_at else None,
                          "mounted": app.transcript.mounted_count, "entries": len(app.transcript.entries)}}))
    asyncio.run(main())
""")


def write_session(data: Path, workspace: Path, turns: int) -> None:
    from loom_engine.sessions.store import SessionStore

    writer = SessionStore(data / "sessions").create(workspace, provider="anthropic", model="bench-model")
    for message in resumed_messages(turns):
        writer.append_message(message)
    writer.close()


def resumed_messages(turns: int) -> tuple[Message, ...]:
    messages: list[Message] = []
    answer = markdown_answer(1000)
    for i in range(turns):
        messages.append(Message.user(f"question {i}: what does step {i} change?"))
        call = ToolUsePart(f"call_{i}", "read_file", {"path": f"src/module_{i}.py"})
        messages.append(Message.assistant(TextPart("Let me read it."), call))
        messages.append(Message.tool_results([ToolResultPart(f"call_{i}", "1\timport os\n2\tprint(os.name)")]))
        messages.append(Message.assistant(TextPart(answer)))
    return tuple(messages)


def first_frame(workspace: Path, data: Path, resume: bool) -> dict[str, Any]:
    code = _FIRST_FRAME.format(root=str(ROOT), workspace=str(workspace), data=str(data), resume=resume)
    env = {**os.environ, "LOOM_DATA_DIR": str(data)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                            env=env)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed")
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- the table ---------------------------------------------------------------------------


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def real_chat_rows(workspace: Path, tmp: Path) -> list[dict[str, Any]]:
    """The installed app from process start, in a pseudo-terminal, against the fake server."""
    sys.path.insert(0, str(ROOT))
    from tests.doubles.fake_llm import FakeLLMServer

    from .real_tui import measure_chat

    with FakeLLMServer() as server:
        chat = measure_chat(workspace, tmp, server, markdown_answer())
        ready_rows = ready_for_prompt_rows(workspace, tmp, server)
    during = chat.echo_first_request_ms
    streaming = chat.echo_streaming_ms
    first_request_ms = chat.enter_to_request_s * 1000
    return [
        row("real app: first frame (from process start)", chat.first_frame_s * 1000, "ms"),
        row("real app: start-up work done (CPU idle)", chat.settled_s * 1000, "ms"),
        row("real app: first prompt, Enter -> request at the server", first_request_ms, "ms", "< 150",
            first_request_ms < 150),
        row("real app: key typed right after that Enter -> on screen", chat.echo_right_after_enter_ms, "ms", "< 100",
            chat.echo_right_after_enter_ms < 100),
        row(f"real app: key -> screen during the first request p99 ({len(during)} keys)", pct(during, 0.99), "ms",
            "< 100", pct(during, 0.99) < 100),
        row("real app: key -> screen while streaming p50", pct(streaming, 0.5), "ms"),
        row(f"real app: key -> screen while streaming p99 ({len(streaming)} keys)", pct(streaming, 0.99), "ms",
            "< 100", pct(streaming, 0.99) < 100),
        row("real app: Ctrl+D -> process exited", chat.quit_s * 1000, "ms"),
        *ready_rows,
    ]


READY_RUNS = 3


def ready_for_prompt_rows(workspace: Path, tmp: Path, server: Any) -> list[dict[str, Any]]:
    """Spawn -> the first prompt at the server, typed the moment the prompt box shows,
    for `loom` and (when installed) Claude Code in the same run; and keys typed through
    Loom's start-up, echoed."""
    from .bench_headless import _peer, _peer_env
    from .real_tui import accept_claude_first_run, measure_ready, measure_startup_echo

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               LOOM_DATA_DIR=str(tmp / "ready-data"), LOOM_CONFIG_DIR=str(tmp / "ready-config"),
               LOOM_PROVIDER="anthropic", LOOM_MODEL="claude-sonnet-4-6", TERM="xterm-256color", COLUMNS="120",
               LINES="40")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    loom = [sys.executable, "-m", "loom_cli"]
    ours = sorted(measure_ready(loom, workspace, env, server, "Loom") for _ in range(READY_RUNS))[READY_RUNS // 2]
    echoes = measure_startup_echo(loom, workspace, env, "Loom")
    rows = [
        row(f"real app (python -m loom_cli, no warm server): ready for a prompt, spawn -> request (typed at the "
            f"first frame, median of {READY_RUNS})",
            ours * 1000, "ms"),
        row(f"real app: key -> screen through start-up, max of {len(echoes)} keys", max(echoes), "ms", "< 100",
            max(echoes) < 100),
    ]
    cold_ready, warm_ready, warm_echoes = _installed_loom_chat(workspace, env, server)
    rows += [
        row("installed loom, cold (no server: the first run): chat ready for a prompt", cold_ready * 1000, "ms"),
        row("installed loom, warm (server up): chat ready for a prompt", warm_ready * 1000, "ms"),
        row(f"installed loom, warm: key -> screen through start-up, max of {len(warm_echoes)} keys",
            max(warm_echoes), "ms", "< 100", max(warm_echoes) < 100),
    ]
    claude = _peer("claude")
    if claude is None:
        return [*rows, row("Claude Code: not installed (npm install @anthropic-ai/claude-code)", "-", "")]
    peer_env = _peer_env(tmp, server)
    peer_env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    accept_claude_first_run(Path(peer_env["HOME"]), workspace, peer_env["ANTHROPIC_API_KEY"])
    argv = [str(claude), "--model", "claude-sonnet-4-5"]
    theirs = sorted(measure_ready(argv, workspace, peer_env, server, "\u276f")
                    for _ in range(READY_RUNS))[READY_RUNS // 2]
    return [*rows,
            row("Claude Code chat: ready for a prompt, spawn -> request", theirs * 1000, "ms"),
            row("ready for a prompt: python -m loom_cli (no warm server) / Claude Code", ours / theirs, "x"),
            row("ready for a prompt: installed loom, cold / Claude Code", cold_ready / theirs, "x"),
            row("ready for a prompt: installed loom, warm / Claude Code", warm_ready / theirs, "x", "<= 1.4",
                warm_ready / theirs <= 1.4)]


def _installed_loom_chat(workspace: Path, env: dict[str, str], server: Any
                         ) -> tuple[float, float, list[float]]:
    """The installed `loom` chat from process start: ready for a prompt cold (no warm
    server: the first run) and warm (the server up), and keys echoed through a warm start."""
    from .real_tui import measure_ready, measure_startup_echo
    from .warm_loom import LOOM_SCRIPT, runtime_folder, wait_for_server, warm_env

    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the installed Loom, as a user runs it
    argv = [str(LOOM_SCRIPT)]
    cold = []
    for _ in range(READY_RUNS):
        with runtime_folder() as runtime:
            cold.append(measure_ready(argv, workspace, warm_env(env, runtime), server, "Loom"))
    with runtime_folder() as runtime:
        measure_ready(argv, workspace, warm_env(env, runtime), server, "Loom")
        wait_for_server(runtime)
        warm = sorted(measure_ready(argv, workspace, warm_env(env, runtime), server, "Loom")
                      for _ in range(READY_RUNS))
        echoes = measure_startup_echo(argv, workspace, warm_env(env, runtime), "Loom")
    return sorted(cold)[READY_RUNS // 2], warm[READY_RUNS // 2], echoes


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "repo"
        workspace.mkdir()
        data = Path(tmp) / "data"

        rows.extend(real_chat_rows(workspace, Path(tmp)))

        answer = markdown_answer()
        chunks = chunks_of(answer, 800)
        ours = asyncio.run(ours_streaming(workspace, data, chunks))
        gc.collect()
        stock = asyncio.run(stock_streaming(chunks))
        rows.append(row(f"20 KB answer, {len(chunks)} chunks @ {RATE:.0f}/s: achieved rate (loom)", ours["rate"],
                        "chunks/s", f">= 0.95 x {RATE:.0f}", ours["rate"] >= 0.95 * RATE))
        rows.append(row("  same stream, stock Markdown.append: achieved rate", stock["rate"], "chunks/s"))
        rows.append(row("  CPU share of a core (loom)", ours["cpu"] * 100, "%", "< 35", ours["cpu"] < 0.35))
        rows.append(row("  CPU share of a core (stock Markdown)", stock["cpu"] * 100, "%"))
        rows.append(row("  event-loop lag p50 (loom)", ours["p50"], "ms"))
        rows.append(row("  event-loop lag p99 (loom)", ours["p99"], "ms", "< 50", ours["p99"] < 50))
        rows.append(row("  event-loop lag p50 (stock Markdown)", stock["p50"], "ms"))
        rows.append(row("  event-loop lag p99 (stock Markdown)", stock["p99"], "ms"))
        rows.append(row("  lag p99: stock / loom", stock["p99"] / max(ours["p99"], 0.01), "x", "> 1",
                        stock["p99"] > ours["p99"]))

        # Each phase starts from a clean heap: a full collection of the garbage the earlier
        # apps of this process left (the stock Markdown run leaves a lot) would otherwise
        # land inside the next measurement as a pause that a real session never has.
        gc.collect()
        idle, busy = asyncio.run(keypress_latency(workspace, data, chunks_of(answer, 1600)))
        rows.append(row("keypress -> screen, idle p50", pct(idle, 0.5), "ms"))
        rows.append(row("keypress -> screen while streaming p50", pct(busy, 0.5), "ms"))
        rows.append(row("keypress -> screen while streaming p99", pct(busy, 0.99), "ms", "< 100",
                        pct(busy, 0.99) < 100))

        gc.collect()
        session = asyncio.run(long_session(workspace, data, 200))
        rows.append(row("200 turns: lag p99 streaming, turn 1", session["p99_first"], "ms"))
        rows.append(row("200 turns: lag p99 streaming, after turn 200", session["p99_last"], "ms", "< 50",
                        session["p99_last"] < 50))
        rows.append(row("200 turns: mounted blocks / transcript entries",
                        f"{session['mounted']:.0f} / {session['entries']:.0f}", "", "bounded",
                        session["mounted"] <= 160))
        rows.append(row("200 turns: memory growth (RSS)", session["rss_growth"], "MB"))

        write_session(data, workspace, 200)
        resumed = first_frame(workspace, data, resume=True)
        rows.append(row("resume 200-turn session: first frame", resumed["first_frame"] * 1000, "ms", "< 1000",
                        resumed["first_frame"] < 1.0))
        rows.append(row("resume 200-turn session: history on screen", resumed["history"] * 1000, "ms", "< 1000",
                        resumed["history"] < 1.0))
        rows.append(row("resume 200-turn session: mounted / total blocks",
                        f"{resumed['mounted']} / {resumed['entries']}", ""))
    sdks = sorted(name for name in ("anthropic", "openai") if name in sys.modules)
    rows.append(row("provider SDKs imported by the bench process itself", ", ".join(sdks) or "none", "", "none",
                    not sdks))
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
