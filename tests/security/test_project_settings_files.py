"""A cloned repository's `.loom/settings*.toml` that Loom cannot use (issue 19, item 12).

Unknown keys in an untrusted `.loom/settings.toml` stopped Loom (exit 1), though the
README says they are ignored and named; a project file that is not TOML or not UTF-8
stopped it too, so a repository could break every run. Now: unknown keys are one
warning and left out, a file Loom cannot read is one line and skipped, and the run goes
on — while what the file's readable part narrows (its deny rules) still holds. The
user's own config stays strict: a typo there must not quietly drop a deny rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("loom: warning: ")]


@pytest.mark.parametrize("trust", [[], ["--trust-project"]])
def test_unknown_keys_are_named_and_left_out_and_the_rest_applies(workspace: Path, tmp_path: Path,
                                                                  fake_llm: FakeLLMServer, trust: list[str]) -> None:
    path = _write(workspace / ".loom" / "settings.toml",
                  'future_option = true\nmax_turns = 5\n[permissions]\ndeny = ["bash(touch:*)"]\ndney = ["x"]\n'
                  '[tools]\nshell = "zsh"\n')
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch pwned"}), Reply.text("could not"))
    done = loom(["run", *trust, "make a file"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "could not"
    assert _warnings(done.stderr) == [f"loom: warning: {path}: unknown keys permissions.dney, future_option, "
                                      "tools ignored"]
    assert not (workspace / "pwned").exists()  # the file's deny rule holds
    assert "denied" in json.dumps(fake_llm.requests[1].body["messages"][-1])


BROKEN = {
    "not TOML": ("[permissions\nallow = 1", "not valid TOML"),
    "not UTF-8": (b"max_turns = 3\n\xff\xfe", "not UTF-8 text (byte 0xff at position 14)"),
    "wrong kind of value": ('permission_mode = "yolo"\n', "permission_mode"),
    "bad rule": ('[permissions]\ndeny = ["bash("]\n', "missing ')'"),
    "nested too deep": ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),
    "a folder": (None, "not a file"),
}


@pytest.mark.parametrize("name", ["settings.toml", "settings.local.toml"])
@pytest.mark.parametrize("case", list(BROKEN))
def test_a_project_file_loom_cannot_read_is_one_line_and_skipped(workspace: Path, tmp_path: Path,
                                                                 fake_llm: FakeLLMServer, name: str,
                                                                 case: str) -> None:
    content, reason = BROKEN[case]
    path = workspace / ".loom" / name
    if content is None:
        path.mkdir(parents=True)
    else:
        _write(path, content)
    fake_llm.enqueue(Reply.text("still here"))
    env = loom_env(tmp_path, fake_llm)
    done = loom(["run", "hello"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "still here"
    (line,) = _warnings(done.stderr)
    assert line.startswith(f"loom: warning: {path}: ") and reason in line and line.endswith(": skipped"), line
    if name == "settings.toml":  # `loom config` says it too
        shown = loom(["config"], workspace, env)
        assert shown.returncode == 0, shown.stderr
        assert f"  warning: {line.removeprefix('loom: warning: ')}" in shown.stdout


def test_the_users_own_config_stays_strict(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    user = _write(tmp_path / "config" / "config.toml", '[permisions]\ndeny = ["bash(rm:*)"]\n')
    done = loom(["run", "hello"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 1
    assert done.stderr == f"loom: {user}: permisions: Extra inputs are not permitted\n"
    assert fake_llm.requests == []
