"""The installed `loom run` at a usage limit, against the fake server: exit 5 and one line
naming the reset; --wait-for-reset waits (a countdown line on stderr) and finishes the
same turn without running a tool call twice; a reset beyond --max-wait exits 5; bad
flag values are usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

ALLOW = ["--allow", "bash(echo:*)", "--permission-mode", "accept-edits"]


def test_without_the_flag_it_exits_5_naming_the_reset(workspace: Path, tmp_path: Path,
                                                      fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=3 * 3600))
    done = loom(["run", "work on it", "-o", "json"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("loom: Anthropic usage limit reached"), done.stderr
    assert "resets at " in done.stderr and "(in 3h 00m)" in done.stderr and "--wait-for-reset" in done.stderr
    result = json.loads(done.stdout)
    assert result["stop_reason"] == "usage_limit" and result["resets_at"] is not None


def test_wait_for_reset_resumes_the_same_turn(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo ran >> side-effect.txt"}),
                     Reply.usage_limit(reset_in=0.2), Reply.text("finished the work"))
    done = loom(["run", "work on it", "--wait-for-reset", "--max-wait", "90s", *ALLOW], workspace,
                loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "finished the work\n"
    assert (workspace / "side-effect.txt").read_text() == "ran\n"
    assert len(fake_llm.requests) == 3 and fake_llm.requests[2].messages == fake_llm.requests[1].messages
    lines = done.stderr.splitlines()
    assert lines[0].startswith("loom: Anthropic usage limit reached (the 5-hour limit)"), done.stderr
    assert lines[1].startswith("loom: usage limit — resuming at "), done.stderr
    assert "\x1b" not in done.stderr  # not a terminal: plain lines, nothing rewritten


def test_a_reset_beyond_max_wait_exits_5(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=3600))
    done = loom(["run", "work on it", "--wait-for-reset", "--max-wait", "30m"], workspace,
                loom_env(tmp_path, fake_llm))
    assert done.returncode == 5
    assert "that is beyond --max-wait 30m" in done.stderr and done.stderr.count("\n") == 1
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize(("args", "says"), [
    (["--wait-for-reset", "--max-wait", "soon"], "--max-wait 'soon': not a duration (use e.g. 90s, 30m, 5h)"),
    (["--max-wait", "5h"], "--max-wait needs --wait-for-reset"),
])
def test_bad_flags_are_usage_errors(args: list[str], says: str, workspace: Path, tmp_path: Path,
                                    fake_llm: FakeLLMServer) -> None:
    done = loom(["run", "work on it", *args], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 2
    assert done.stderr == f"loom: {says}\n"
    assert fake_llm.requests == []
