"""`import mcp` costs most of a second: a Loom without servers never pays it, and one
with servers pays it off the caller's event loop, after the agent is built."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.loom_command import loom_env

from .helpers import write_servers

_PROBE = """
import asyncio, sys, threading
from loom_cli.bootstrap import RunOptions, build_agent
built = build_agent(RunOptions(), interactive=False)
report = {"after_build": "mcp" in sys.modules, "manager": built.mcp is not None}
if built.mcp is not None:
    async def main():
        built.mcp.start()
        report["right_after_start"] = "mcp" in sys.modules  # the import runs in a thread
        await built.mcp.wait_ready(60)
        report["states"] = [s.state for s in built.mcp.statuses()]
        await built.mcp.aclose()
    asyncio.run(main())
built.agent.session.close()
print(__import__("json").dumps(report))
"""


def _probe(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=workspace, env=loom_env(tmp_path, fake_llm),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_no_servers_no_import(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    assert _probe(tmp_path, workspace, fake_llm) == {"after_build": False, "manager": False}


def test_servers_import_only_when_connecting(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    write_servers(tmp_path / "config" / "mcp.json", {"time": {"command": sys.executable,
                                                             "args": ["-c", "import sys; sys.exit(1)"]}})
    report = _probe(tmp_path, workspace, fake_llm)
    assert report["after_build"] is False and report["manager"] is True
    assert report["right_after_start"] is False
    assert report["states"] == ["failed"]
