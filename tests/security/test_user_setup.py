"""The user's own setup, wrong (issue 19, item 15).

A user config that is a folder was skipped without a word, and a malformed
`ANTHROPIC_BASE_URL` let Loom start (the chat opened; `http://[::1` was an internal
error). Each is now one line naming the cause, exit 2, before anything starts — for
`loom run`, the chat and `loom config`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loom_cli.user_setup import setup_problem
from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.loom_command import LOOM_SCRIPT, loom_env

COMMANDS = [["run", "hello"], [], ["config"]]


def _loom(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # No terminal: were the chat to open, it would end at once rather than wait for keys.
    return subprocess.run(LOOM_SCRIPT + args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("args", COMMANDS, ids=["run", "chat", "config"])
def test_a_user_config_that_is_a_folder_is_one_line_and_exit_2(workspace: Path, tmp_path: Path,
                                                               fake_llm: FakeLLMServer, args: list[str]) -> None:
    (tmp_path / "config" / "config.toml").mkdir(parents=True)
    done = _loom(args, workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"loom: {tmp_path / 'config' / 'config.toml'}: is a folder, not a settings file "
                           "(move it away, or put config.toml there)\n")
    assert done.stdout == "" and fake_llm.requests == []


@pytest.mark.parametrize("url, why", [
    ("not a url", "it must look like http://host:port or https://host/path"),
    ("http://[::1", "it must look like http://host:port or https://host/path"),
    ("ftp://example.com", "it must look like http://host:port or https://host/path"),
    ("http://", "it must look like http://host:port or https://host/path"),
    ("http://localhost:99999", "bad port"),
])
@pytest.mark.parametrize("args", COMMANDS, ids=["run", "chat", "config"])
def test_a_malformed_base_url_is_one_line_and_exit_2(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                     args: list[str], url: str, why: str) -> None:
    done = _loom(args, workspace, loom_env(tmp_path, fake_llm, ANTHROPIC_BASE_URL=url))
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"loom: invalid base URL {url!r} from ANTHROPIC_BASE_URL: {why}\n"
    assert done.stdout == ""


def test_loom_s_folders_must_be_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").write_text("a file")
    monkeypatch.setenv("LOOM_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    assert setup_problem({}) == f"{tmp_path / 'data'}: Loom's data folder is not a folder"
    (tmp_path / "data").unlink()
    assert setup_problem({"OPENAI_BASE_URL": "localhost:11434"}) == (
        "invalid base URL 'localhost:11434' from OPENAI_BASE_URL: it must look like http://host:port or "
        "https://host/path")
    assert setup_problem({"ANTHROPIC_BASE_URL": "", "OPENAI_BASE_URL": "http://localhost:11434/v1"}) is None
