"""What one check remembers (program lookups, folder walks, path verdicts, git config
scans) never outlives it, and what the rule store remembers never outlives a change of
its rules: a changed PATH, symlink or rule gives a fresh answer."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loom_engine.permissions.expansion import FolderWalks, Unknowable, physical
from loom_engine.permissions.layers import SOURCE_SESSION, RuleLayer, RuleStore
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


def test_a_rule_removed_between_checks_no_longer_decides(env: Env) -> None:
    pm = env.manager()
    pm.add_session_rule("deny", "read(src/app.py)")
    line = " && ".join(["cat src/app.py", "head -n 1 src/app.py"] * 30)
    assert bash(pm, line).behavior == "deny"
    pm.remove_rule("deny", "read(src/app.py)", SOURCE_SESSION)
    assert bash(pm, line).behavior == "allow"


def test_the_rules_for_a_tool_follow_every_change_of_the_store(tmp_path: Path) -> None:
    store = RuleStore(tmp_path)

    def denying(*tools: str) -> list[str]:
        return [c.rule.text for c in store.for_tools(tools, "deny", write=False)]

    assert denying("read_file", "grep") == []
    store.add(RuleLayer("cli", deny=("read(.env)", "grep(*.pem)")))
    assert denying("read_file", "grep") == ["read(.env)", "grep(*.pem)"]  # the group's rule once
    assert [c.rule.text for c in store.for_tool("grep", "deny", write=False)] == ["read(.env)", "grep(*.pem)"]
    assert store.remove("deny", "read(.env)", "cli")
    assert denying("read_file", "grep") == ["grep(*.pem)"]
    assert list(store.for_tool("read_file", "deny", write=False)) == []


def test_a_path_folder_relinked_between_checks_is_walked_anew(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    _program(env.root / "tools", "cat")
    empty = env.outside / "empty"
    empty.mkdir()
    link = env.outside / "bin"
    link.symlink_to(env.root / "tools", target_is_directory=True)
    monkeypatch.setenv("PATH", f"{link}{os.pathsep}{os.defpath}")
    pm = env.manager()
    line = " && ".join(["cat src/app.py"] * 10)
    decision = bash(pm, line)
    assert decision.behavior == "ask"
    assert "tools/cat" in decision.reason
    link.unlink()
    link.symlink_to(empty, target_is_directory=True)
    assert bash(pm, line).behavior == "allow"


def test_a_walked_folder_resolves_what_the_whole_walk_resolves(tmp_path: Path) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "l1").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "l2").symlink_to("l1")
    (tmp_path / "real" / "up").symlink_to("..")
    walks = FolderWalks()
    for folder, rest in [("l2", "sub/../sub/x"), ("l2", ".."), ("l2", "up/l1/sub"), ("missing", "a/../b"), ("l2", "")]:
        path = os.path.join(folder, rest)
        assert walks.physical_in(str(tmp_path / folder), rest, path, tmp_path) == physical(path, tmp_path)
        assert walks.physical(path, tmp_path) == physical(path, tmp_path)
    # The folder's own symlinks count towards the limit on the rest of the way.
    previous = tmp_path / "real"
    for k in range(40):
        (tmp_path / f"chain{k}").symlink_to(previous, target_is_directory=True)
        previous = tmp_path / f"chain{k}"
    assert walks.physical_in(str(previous), "sub", "chain39/sub", tmp_path) == tmp_path / "real" / "sub"
    for folder, rest in [(str(previous), "up/sub"), ("/proc/self", "cwd")]:
        path = os.path.join(folder, rest)
        with pytest.raises(Unknowable) as whole:
            physical(path, tmp_path)
        with pytest.raises(Unknowable) as walked:
            walks.physical_in(folder, rest, path, tmp_path)
        assert str(walked.value) == str(whole.value)
