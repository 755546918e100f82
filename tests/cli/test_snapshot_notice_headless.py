"""`loom run` says once on stderr, as a warning, when rewind's snapshots cannot be taken
in this workspace, with the reason and what `loom rewind` can still do."""

from __future__ import annotations

from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env


def _warnings(stderr: str, words: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("loom: warning:") and words in line]


def test_too_many_files_is_one_warning(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text("[snapshots]\nmax_files = 1\n")
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo hi"}), Reply.text("done"))
    done = loom(["run", "--permission-mode", "bypass", "say hi"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert _warnings(done.stderr, "snapshot") == [
        "loom: warning: snapshots are off: more than 1 file here ([snapshots] max_files); loom rewind can rewind"
        " only the conversation"]


def test_without_git_one_warning_says_what_rewind_keeps(tmp_path: Path, workspace: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    (tmp_path / "bin").mkdir()
    fake_llm.enqueue(Reply.text("done"))
    env = loom_env(tmp_path, fake_llm, PATH=str(tmp_path / "bin"))  # no git on it (loom starts by full path)
    done = loom(["run", "say hi"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert _warnings(done.stderr, "git") == [
        "loom: warning: git is not installed: loom rewind can restore the conversation, and only files Loom's"
        " edit tools changed"]


def test_a_workspace_where_snapshots_work_gets_no_warning(tmp_path: Path, workspace: Path,
                                                          fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("done"))
    done = loom(["run", "say hi"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
