"""End to end: `loom run` fixes a bug in a small repo (grep -> read_file -> edit_file -> bash)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def buggy_repo(workspace: Path) -> Path:
    root = workspace
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TEST)
    return root


def _script(server: FakeLLMServer) -> None:
    server.enqueue(
        Reply.tool("grep", {"pattern": "def add", "output_mode": "content"}),
        Reply.tool("read_file", {"path": "calc.py"}),
        Reply.tool("edit_file", {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
        Reply.tool("bash", {"command": "python -m pytest -q test_calc.py"}),
        Reply.text("Fixed: add() subtracted instead of adding; the test passes."),
    )


def _tool_results(server: FakeLLMServer) -> list[str]:
    out = []
    for block in server.requests[-1].body["messages"]:
        for part in block["content"] if isinstance(block["content"], list) else []:
            if part.get("type") == "tool_result":
                content = part["content"]
                out.append(content if isinstance(content, str) else json.dumps(content))
    return out


def test_fix_with_accept_edits(buggy_repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    _script(fake_llm)
    done = loom(["run", "the add test fails; fix it", "--permission-mode", "accept-edits",
                 "--allow", "bash(python -m pytest:*)"], buggy_repo, loom_env(tmp_path, fake_llm), timeout=120)
    assert done.returncode == 0, done.stderr
    assert (buggy_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    results = _tool_results(fake_llm)
    assert "calc.py:1:def add(a, b):" in results[0]
    assert "1 passed" in results[3]
    assert "Fixed" in done.stdout


def test_default_mode_refuses_the_edit(buggy_repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    _script(fake_llm)
    done = loom(["run", "the add test fails; fix it"], buggy_repo, loom_env(tmp_path, fake_llm), timeout=120)
    assert done.returncode == 0, done.stderr
    assert (buggy_repo / "calc.py").read_text() == BUGGY
    assert "--permission-mode accept-edits" in done.stderr or "--allow 'edit_file" in done.stderr
    results = _tool_results(fake_llm)
    assert "Refused: this is a non-interactive run" in results[2]
