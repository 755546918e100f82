"""A Stop hook written for Claude Code, from a project's .claude/settings.json, reads the
answer from the last line of ``transcript_path`` under `loom run` (sandboxed, where the
machine has a sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

STOP = 'tail -1 "$(jq -r .transcript_path)" | jq -c .message.content > last.json'


def test_a_claude_code_stop_hook_reads_the_last_answer(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / "hello.py").write_text("print('hello')\n")
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": STOP}]}]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    fake_llm.enqueue(Reply.tool("read_file", {"path": "hello.py"}), Reply.text("It prints hello."))
    done = loom(["run", "--trust-project-hooks", "what does hello.py do?"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert json.loads((repo / "last.json").read_text()) == [{"type": "text", "text": "It prints hello."}]
