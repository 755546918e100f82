"""What one check remembers (program lookups, path verdicts, git config scans) never
outlives it: a changed PATH or changed rules give a fresh answer."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loom_engine.permissions.expansion import Unknowable
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.program_lookup import ProgramLookups, find_program

from .conftest import Env, bash


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_lookup_follows_a_changed_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _program(tmp_path / "a", "tool")
    second = _program(tmp_path / "b", "tool")
    lookups = ProgramLookups()
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    assert lookups.find("tool", tmp_path) == first
    monkeypatch.setenv("PATH", str(tmp_path / "b"))
    assert lookups.find("tool", tmp_path) == second
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    assert lookups.find("tool", tmp_path) == first == find_program("tool", tmp_path)


def test_a_relative_path_entry_is_looked_up_per_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = _program(tmp_path / "one" / "bin", "tool")
    monkeypatch.setenv("PATH", "bin")
    lookups = ProgramLookups()
    assert lookups.find("tool", tmp_path / "one") == here
    assert lookups.find("tool", tmp_path / "two") is None


def test_an_unknowable_lookup_raises_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/proc/self/cwd")
    lookups = ProgramLookups()
    for _ in range(2):
        with pytest.raises(Unknowable, match="/proc"):
            lookups.find("ls", tmp_path)


def test_each_repeat_of_a_command_is_judged_with_the_program_path_now_names(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    pm = env.manager()
    line = " && ".join(["cat src/app.py"] * 20)
    monkeypatch.setenv("PATH", os.defpath)
    assert bash(pm, line).behavior == "allow"
    _program(env.root / "bin", "cat")
    monkeypatch.setenv("PATH", f"{env.root / 'bin'}{os.pathsep}{os.defpath}")
    decision = bash(pm, line)
    assert decision.behavior == "ask"
    assert "bin/cat" in decision.reason
    monkeypatch.setenv("PATH", os.defpath)
    assert bash(pm, line).behavior == "allow"


def test_a_rule_added_between_checks_decides_the_next_one(env: Env) -> None:
    pm = env.manager()
    line = " && ".join(["cat src/app.py", "head -n 1 src/app.py"] * 30)
    assert bash(pm, line).behavior == "allow"
    pm.rules.add(RuleLayer("cli", deny=("read(src/app.py)",)))
    decision = bash(pm, line)
    assert decision.behavior == "deny"
    assert "src/app.py" in decision.reason


def test_a_repeated_path_outside_asks_in_every_command(env: Env) -> None:
    pm = env.manager()
    secret = env.outside / "secret.txt"
    decision = bash(pm, f"cat src/app.py && cat {secret} && wc -l {secret}")
    assert decision.behavior == "ask"
    assert str(secret) in decision.reason
