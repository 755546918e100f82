"""Sessions and Loom's other files are the user's alone (issue 19, item 8).

The data folder was 0755 and session files 0644: anyone on the machine could read
every file the model had read. Now Loom's folders are 0700 and its files 0600 whatever
the umask, and a start closes what an older Loom left open. The runs are the real
`loom run` with umask 000 (the worst a user can have), against the fake LLM server.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_cli.tui.prompt_input import PromptHistory
from loom_engine.private_files import open_private, private_folder, secure_folders, write_private
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM, loom_env


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def open_to_others(*roots: Path) -> list[str]:
    """Everything under ``roots`` (and they) that the group or others may use."""
    found = []
    for root in roots:
        for path in (root, *root.rglob("*")):
            if not path.is_symlink() and mode(path) & 0o077:
                found.append(f"{oct(mode(path))} {path}")
    return found


def run_with_umask(args: list[str], cwd: Path, env: dict[str, str], umask: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(LOOM + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, umask=umask)


@pytest.fixture
def older_loom(tmp_path: Path) -> tuple[Path, Path]:
    """Folders as an older Loom left them: 0755, files 0644, a hook script 0755."""
    config, data = tmp_path / "config", tmp_path / "data"
    (config / "hooks").mkdir(parents=True)
    (data / "sessions").mkdir(parents=True)
    (config / "config.toml").write_text('model = "claude-sonnet-4-6"\n')
    (config / "hooks" / "guard.sh").write_text("#!/bin/sh\nexit 0\n")
    (data / "sessions" / "20250101-000000-abcdef.jsonl").write_text('{"type": "session"}\n')
    (data / "workspaces.json").write_text('{"version": 1, "workspaces": {}}\n')
    for path in (config, data, *config.rglob("*"), *data.rglob("*")):
        path.chmod(0o755 if path.is_dir() or path.suffix == ".sh" else 0o644)
    return config, data


def test_a_run_makes_every_folder_and_file_private(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                   older_loom: tuple[Path, Path]) -> None:
    config, data = older_loom
    assert open_to_others(config, data)  # the state the issue found
    # A file edit: the snapshots (a shadow git repository) are written too.
    fake_llm.enqueue(Reply.tool("write_file", {"path": "new.txt", "content": "x\n"}), Reply.text("done"))
    done = run_with_umask(["run", "--permission-mode", "accept-edits", "write it"], workspace,
                          loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert (workspace / "new.txt").exists()
    assert (data / "snapshots").is_dir()
    assert open_to_others(config, data) == []
    assert mode(config) == mode(data) == 0o700
    assert mode(config / "hooks" / "guard.sh") == 0o700  # still runs: only others' bits went
    assert mode(config / "config.toml") == 0o600
    (new_session,) = [p for p in (data / "sessions").glob("*.jsonl") if "abcdef" not in p.name]
    assert mode(new_session) == 0o600


def test_loom_mcp_add_writes_the_users_file_private(workspace: Path, tmp_path: Path,
                                                   fake_llm: FakeLLMServer) -> None:
    done = run_with_umask(["mcp", "add", "srv", "--", "node", "x.js"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "config") == 0o700 and mode(tmp_path / "config" / "mcp.json") == 0o600


@pytest.fixture
def umask_zero() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("umask_zero")
def test_new_files_and_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    folder = private_folder(tmp_path / "a" / "b")
    assert mode(tmp_path / "a") == mode(folder) == 0o700
    with open_private(folder / "log.jsonl") as handle:
        handle.write("line\n")
    write_private(folder / "records.json", "{}")
    assert mode(folder / "log.jsonl") == mode(folder / "records.json") == 0o600
    os.umask(0o277)  # takes the owner's write bit too: the files are still exactly 0600
    write_private(folder / "other.json", b"{}")
    with open_private(folder / "new.jsonl", "w") as handle:
        handle.write("x")
    assert mode(folder / "other.json") == mode(folder / "new.jsonl") == 0o600


@pytest.mark.usefixtures("umask_zero")
def test_prompt_history_is_private(tmp_path: Path) -> None:
    history = PromptHistory(tmp_path / "data" / "history.jsonl", limit=2)
    for text in ("one", "two", "three", "four", "five"):  # appends, then a rewrite
        history.add(text)
    assert mode(tmp_path / "data") == 0o700 and mode(tmp_path / "data" / "history.jsonl") == 0o600


def test_existing_contents_are_fixed_once_and_the_folders_at_every_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "sessions").mkdir(parents=True)
    old = data / "sessions" / "old.jsonl"
    old.write_text("{}\n")
    link = data / "elsewhere"
    outside = tmp_path / "outside.txt"
    outside.write_text("not Loom's\n")
    link.symlink_to(outside)
    for path in (data, data / "sessions", old, outside):
        path.chmod(0o755)
    assert secure_folders(data, [data]) == []
    assert (mode(data), mode(data / "sessions"), mode(old)) == (0o700, 0o700, 0o700)
    assert mode(outside) == 0o755  # a symlink is never followed
    assert json.loads((data / ".private-folders.json").read_text()) == [str(data)]
    data.chmod(0o755)
    old.chmod(0o644)  # after the first start: not walked again (Loom writes its files 0600)
    assert secure_folders(data, [data]) == []
    assert mode(data) == 0o700 and mode(old) == 0o644
