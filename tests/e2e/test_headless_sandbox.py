"""`loom run` and the sandbox: `-o json` and stream-json report it; where it cannot start, one
line on stderr says why and the fix, and in mode `on` commands are refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from loom_engine.sandbox import SandboxConfig, open_sandbox
from loom_engine.workspace import Workspace
from tests.doubles import no_sandbox
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM, loom, loom_env

without_sandbox = pytest.mark.skipif(not no_sandbox.available(),
                                        reason="cannot make a machine without a sandbox here")


@pytest.fixture
def confined(tmp_path: Path) -> None:
    sandbox = open_sandbox(SandboxConfig(), Workspace.at(tmp_path))
    sandbox.close()
    if sandbox.status.backend != "bubblewrap":
        pytest.skip("bubblewrap cannot confine commands on this machine")


def _run_without_sandbox(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*no_sandbox.WITHOUT_SANDBOX, *LOOM, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=90)


def _tool_results(server: FakeLLMServer) -> list[str]:
    return [json.dumps(block.get("content")) for request in server.requests
            for message in request.body["messages"] if isinstance(message.get("content"), list)
            for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]


@pytest.mark.usefixtures("confined")
def test_json_reports_the_sandbox(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("done"))
    done = loom(["run", "hi", "-o", "json"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    sandbox = json.loads(done.stdout)["sandbox"]
    assert (sandbox["mode"], sandbox["active"], sandbox["backend"], sandbox["network"]) == \
        ("auto", True, "bubblewrap", "off")
    assert sandbox["detail"].startswith("bubblewrap ") and sandbox["reason"] == ""
    assert "sandbox" not in done.stderr


def test_stream_json_says_it_in_the_first_and_the_last_line(workspace: Path, tmp_path: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("done"))
    done = loom(["run", "hi", "-o", "loom-stream-json", "--sandbox", "off"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    off = {"mode": "off", "active": False, "backend": None, "network": "off", "allowed_domains": [], "detail": "",
           "reason": "", "fix": ""}
    assert events[0] == {"type": "system", "subtype": "init", "session_id": events[0]["session_id"],
                         "model": "claude-sonnet-4-6", "sandbox": off,
                         "context_window": {"tokens": 200_000, "source": "Loom's model table"}}
    assert events[0]["session_id"] and events[1]["type"] == "turn_started"
    assert events[-1]["type"] == "finished" and events[-1]["sandbox"] == off
    assert done.stderr == ""  # off is the user's choice: nothing to warn about


@without_sandbox
def test_unavailable_in_auto_one_line_names_why_and_the_fix_and_commands_ask(
        workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("could not"))
    done = _run_without_sandbox(["run", "make a file", "-o", "json"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "sandbox" in line]
    assert len(lines) == 1 and lines[0].startswith(
        "loom: warning: sandbox: unavailable — user namespaces are turned off (user.max_user_namespaces = 0")
    assert "; commands run unconfined and ask first. Fix: sudo sysctl -w user.max_user_namespaces=" in lines[0]
    assert json.loads(done.stdout)["sandbox"]["active"] is False
    assert not (workspace / "made.txt").exists()  # asked, and a headless question is a denial
    assert "--allow" in done.stderr


@without_sandbox
def test_unavailable_in_mode_on_commands_are_refused_even_when_allowed(
        workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("refused"))
    done = _run_without_sandbox(["run", "make a file", "--sandbox", "on", "--allow", "bash(touch:*)"],
                                   workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "loom: warning: sandbox: unavailable — user namespaces are turned off" in done.stderr
    assert "; commands are refused. Fix: " in done.stderr
    assert not (workspace / "made.txt").exists()
    (result,) = _tool_results(fake_llm)
    assert "Not run: the sandbox is required (sandbox mode on) but cannot start here" in result
