"""`loom run "/name args"`: a custom command or a skill expanded headless."""

from __future__ import annotations

import json
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env


def _review(root: Path) -> None:
    folder = root / ".loom" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text(
        "---\ndescription: Review one file\nargument-hint: <file>\n---\nReview @$0 for bugs; report by severity.\n")


def _first_user_texts(server: FakeLLMServer) -> list[str]:
    content = server.requests[0].body["messages"][0]["content"]
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


def test_loom_run_expands_a_project_command(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    _review(workspace)
    fake_llm.enqueue(Reply.text("No bugs."))
    done = loom(["run", "/review src/app.py"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "No bugs."
    texts = _first_user_texts(fake_llm)
    assert texts[0] == "Review @src/app.py for bugs; report by severity."
    assert "def greet(name):" in texts[1]


def test_loom_run_runs_a_skill_by_name(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("Nothing to commit."))
    done = loom(["run", "/commit"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    [text] = _first_user_texts(fake_llm)
    assert "# Commit the current changes" in text and "ARGUMENTS" not in text


def test_path_like_slash_text_is_sent_as_written(workspace: Path, tmp_path: Path,
                                                 fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("a hosts file"), Reply.text("a folder"))
    env = loom_env(tmp_path, fake_llm)
    assert loom(["run", "/etc/hosts: what is it?"], workspace, env).returncode == 0
    assert loom(["-p", "/tmp is full"], workspace, env).returncode == 0  # /tmp exists: a path
    sent = json.dumps([r.body["messages"][0]["content"] for r in fake_llm.requests])
    assert sent.count("/etc/hosts: what is it?") == 1 and "/tmp is full" in sent


def test_an_unknown_or_chat_only_command_is_refused_before_any_request(
        workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """As `claude -p "/nosuchcommand"`: no request, the name and the near ones said (but on
    stderr with exit 2, where Claude Code prints it as the answer with exit 0)."""
    _review(workspace)
    env = loom_env(tmp_path, fake_llm)
    typo = loom(["run", "/reviw src/app.py"], workspace, env)
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.strip().splitlines()[-1] == (
        "loom: unknown command /reviw (did you mean /review?) — `loom skills` and /help in the chat list them")
    unknown = loom(["-p", "/nosuchcommand please", "-o", "json"], workspace, env)
    assert unknown.returncode == 2 and "loom: unknown command /nosuchcommand — " in unknown.stderr
    chat_only = loom(["run", "/clear"], workspace, env)
    assert chat_only.returncode == 2
    assert "loom: /clear is a command of the chat (`loom`); `loom run` does not run it" in chat_only.stderr
    assert fake_llm.requests == []


def test_a_headless_shell_line_that_would_ask_is_denied(workspace: Path, tmp_path: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    folder = workspace / ".loom" / "commands"
    folder.mkdir(parents=True)
    (folder / "mk.md").write_text("Result: !`touch made.txt`\n")
    fake_llm.enqueue(Reply.text("ok"))
    done = loom(["run", "/mk"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert not (workspace / "made.txt").exists()
    assert "refused bash" in done.stderr and "--allow" in done.stderr
    [text] = _first_user_texts(fake_llm)
    assert text.startswith("Result: [`touch made.txt` was not run:")


def test_a_shadowed_command_is_warned_about(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    folder = workspace / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "clear.md").write_text("Clear the build cache.\n")
    fake_llm.enqueue(Reply.text("hi"))
    done = loom(["run", "hello"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0
    assert "clear.md: /clear is a built-in command, which wins" in done.stderr
