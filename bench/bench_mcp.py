"""MCP start-up in the real chat: first frame, when the servers' tools arrive, and the
first prompt's Enter -> request, with no MCP server configured and with the four
reference servers (server-everything, server-filesystem, mcp-server-git,
mcp-server-time) in the user's mcp.json.

The first frame must not wait for MCP (the ``mcp`` package is imported and the servers
start after it); "tools arrive" is when the status bar says the servers connected; the
first request carries their tools (it waits for servers still connecting, up to
MCP_TIMEOUT). Run with ``python -m bench bench_mcp``; needs node and npm or an installed
cache of the servers (tests/doubles/mcp_servers.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .real_tui import ROOT, PtyProcess

SERVER_COUNT = 4


@dataclass(frozen=True)
class McpStart:
    first_frame_s: float
    tools_arrived_s: float | None  # None: no server configured
    enter_to_request_s: float
    mcp_tools: int  # MCP tools in the first request


def reference_servers(folder: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.doubles.mcp_servers import install

    servers = install()
    repo = folder / "shared"  # the folder server-filesystem serves and mcp-server-git reads
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return {"everything": servers.everything(), "filesystem": servers.filesystem(repo),
            "git": servers.python_server("mcp_server_git", "--repository", str(repo)),
            "time": servers.python_server("mcp_server_time", "--local-timezone", "UTC")}


def measure(tmp: Path, servers: dict[str, Any] | None, *, early: bool = False) -> McpStart:
    """One start of the chat; ``early``: the prompt is sent as soon as the first frame is
    up (the request then waits for the servers still connecting), else once the tools
    arrived. The request's time is from process start when ``early``, from Enter else."""
    sys.path.insert(0, str(ROOT))
    from tests.doubles.fake_llm import FakeLLMServer, Reply

    workspace = tmp / "repo"
    workspace.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = tmp / "config"
    config.mkdir(exist_ok=True)
    if servers:
        (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_", "MCP_"))}
    with FakeLLMServer() as server:
        env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.anthropic_base_url,
                   LOOM_DATA_DIR=str(tmp / "data"), LOOM_CONFIG_DIR=str(config), LOOM_PROVIDER="anthropic",
                   LOOM_MODEL="claude-sonnet-4-6", TERM="xterm-256color", COLUMNS="120", LINES="40",
                   MCP_TIMEOUT="30000")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        server.enqueue(Reply(text="all done"))
        term = PtyProcess([sys.executable, "-m", "loom_cli"], workspace, env)
        try:
            first_frame = term.shown_text_after("Ask Loom", 0, timeout=60) - term.started
            arrived = None
            if servers and not early:
                arrived = term.shown_text_after(f"{len(servers)} MCP servers", 0, timeout=90) - term.started
            if not early:
                term.wait_idle(0.3)
            offset = term.size
            term.write("hi")
            if not early:
                term.wait_idle(0.2)
            else:
                time.sleep(0.1)  # keys and Enter in one read would be taken as a paste
            sent = term.write("\r")
            enter = term.started if early else sent
            deadline = time.monotonic() + 60
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.005)
            if not server.requests:
                raise TimeoutError("the first prompt never reached the server")
            request_at = time.perf_counter()
            tools = [t["name"] for t in server.requests[0].body.get("tools", [])]
            term.shown_text_after("all done", offset, timeout=30)  # the answer, then quit
            term.wait_idle(0.3)
            term.write("\x04")
            term.wait_exit()
        finally:
            term.kill()
    return McpStart(first_frame, arrived, request_at - enter, sum(name.startswith("mcp__") for name in tools))


def row(benchmark: str, value: float | str, unit: str, target: str = "", ok: bool | None = None) -> dict[str, Any]:
    return {"benchmark": benchmark, "value": round(value, 3) if isinstance(value, float) else value,
            "unit": unit, "target": target, "ok": ok}


def run() -> list[dict[str, Any]]:
    from statistics import median

    runs: dict[str, list[McpStart]] = {"none": [], "four": []}
    early: dict[str, McpStart] = {}
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        servers = reference_servers(base / "servers")
        for index in range(3):  # alternated, so that a slower moment hits both
            for name, config in (("none", None), ("four", servers)):
                runs[name].append(measure(base / f"{name}-{index}", config))
        for name, config in (("none", None), ("four", servers)):
            early[name] = measure(base / f"{name}-early", config, early=True)
    none_frame = median(r.first_frame_s for r in runs["none"]) * 1000
    four_frame = median(r.first_frame_s for r in runs["four"]) * 1000
    arrived = median(r.tools_arrived_s or 0.0 for r in runs["four"]) * 1000
    slower = four_frame - none_frame
    return [
        row("no MCP: first frame (from process start, median of 3)", none_frame, "ms"),
        row("no MCP: prompt sent at the first frame -> request (from process start)",
            early["none"].enter_to_request_s * 1000, "ms"),
        row("no MCP: Enter -> request (after start-up)", median(r.enter_to_request_s for r in runs["none"]) * 1000,
            "ms"),
        row(f"{SERVER_COUNT} reference servers: first frame (median of 3)", four_frame, "ms"),
        row("  first frame, with MCP minus without", slower, "ms", "< 100", slower < 100),
        row(f"  tools arrive (status bar: {SERVER_COUNT} MCP servers), from process start", arrived, "ms"),
        row("  prompt sent at the first frame -> request (from process start; waits for the servers)",
            early["four"].enter_to_request_s * 1000, "ms"),
        row("  MCP tools in that first request", str(early["four"].mcp_tools), "tools", "> 0",
            early["four"].mcp_tools > 0),
        row("  Enter -> request (after the tools arrived)", median(r.enter_to_request_s for r in runs["four"]) * 1000,
            "ms"),
    ]
