"""End to end: a "remember …" prompt saved by one `loom run` is in the next session's
system prompt for that project, and in no other project's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env


def _system(request_body: dict) -> str:
    system = request_body.get("system", "")
    return system if isinstance(system, str) else "".join(block.get("text", "") for block in system)


def test_remembered_in_the_next_session_of_this_project_only(workspace: Path, tmp_path: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.tool("memory", {"command": "create", "path": "/memories/MEMORY.md",
                                           "file_text": "- Always run tests with `make check`.\n"}),
                     Reply.text("Noted."))
    done = loom(["run", "remember: always run tests with make check", "-o", "stream-json"], workspace, env)
    assert done.returncode == 0, done.stderr
    first_system = _system(fake_llm.requests[0].body)
    assert 'When the user says "remember …"' in first_system and "Nothing is saved yet" in first_system
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    results = [b for m in lines if m["type"] == "user" for b in m["message"]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert "Saved to memory: /memories/MEMORY.md created" in json.dumps(results)

    # another worktree of the same repository: the same memory
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=workspace, check=True)
    subprocess.run(["git", "worktree", "add", "-q", str(tmp_path / "wt")], cwd=workspace, check=True)
    fake_llm.enqueue(Reply.text("ok"))
    assert loom(["run", "hello"], tmp_path / "wt", env).returncode == 0
    assert "- Always run tests with `make check`." in _system(fake_llm.requests[-1].body)

    other = tmp_path / "other"
    other.mkdir()
    fake_llm.enqueue(Reply.text("ok"))
    assert loom(["run", "hello"], other, env).returncode == 0
    assert "make check" not in _system(fake_llm.requests[-1].body)

    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.toml").write_text("[memory]\nenabled = false\n")
    fake_llm.enqueue(Reply.text("ok"))
    assert loom(["run", "hello"], workspace, env).returncode == 0
    body = fake_llm.requests[-1].body
    assert "make check" not in _system(body) and "memory" not in [tool["name"] for tool in body["tools"]]
