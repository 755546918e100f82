"""`loom acp` driven by another client than the SDK's: the npm ``acpx`` (0.1.15, Node 20)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doubles import acpx
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom_env


@pytest.fixture(scope="session")
def acpx_program() -> Path:
    try:
        return acpx.install()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"the acpx client could not be installed: {error}")


def test_acpx_runs_a_prompt_with_an_allowed_write(tmp_path: Path, fake_llm: FakeLLMServer,
                                                  acpx_program: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    fake_llm.enqueue(Reply.tool("write_file", {"path": "new.txt", "content": "hi\n"}),
                     Reply.text("Hello from Loom via acpx"))
    env = loom_env(tmp_path, fake_llm, HOME=str(tmp_path / "home"))  # acpx keeps its state under HOME
    done = subprocess.run([str(acpx_program), "--agent", f"{sys.executable} -m loom_cli acp", "--cwd",
                           str(workspace), "--approve-all", "--format", "json", "exec", "write a greeting"],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    methods = [m["method"] for m in messages if "method" in m]
    assert methods[:2] == ["initialize", "session/new"]
    assert "session/request_permission" in methods
    text = "".join(m["params"]["update"]["content"]["text"] for m in messages
                   if m.get("method") == "session/update"
                   and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    assert text == "Hello from Loom via acpx"
    assert [m["result"]["stopReason"] for m in messages if "stopReason" in m.get("result", {})] == ["end_turn"]
    assert (workspace / "new.txt").read_text() == "hi\n"
