"""Claude Code's project settings files, read into the settings and their trust split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_cli.claude_settings import read_claude_files
from loom_cli.project_trust import changes_hash, ignored_line
from loom_cli.settings import RuleSet, load_settings


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _claude(repo: Path, data: object, name: str = "settings.json") -> Path:
    return _write(repo / ".claude" / name, json.dumps(data))


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return tmp_path / "cfg" / "config.toml"


FULL = {
    "permissions": {
        "allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"],
        "deny": ["Read(./.env)", "Bash(curl:*)"],
        "ask": ["Bash(git push *)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../docs", "~/notes"],
    },
    # Claude Code's own business: read by nobody here, and no warning about them.
    "env": {"FOO": "1"}, "model": "opus", "statusLine": {"type": "command", "command": "x"},
}


def test_a_file_becomes_loom_settings(workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _claude(workspace, FULL)
    (file,), problems = read_claude_files(workspace)
    assert problems == [] and file.problems == ()
    assert file.source == ".claude/settings.json"
    assert file.data == {
        "permissions": {"deny": ["read(./.env)", "bash(curl:*)"], "ask": ["bash(git push:*)"],
                        "allow": ["bash(npm run test:*)", "read(~/.zshrc)"]},
        "permission_mode": "accept-edits",
        "add_dirs": [str(workspace.parent / "docs"), str(tmp_path / "home" / "notes")],
    }


def test_deny_and_ask_apply_untrusted_the_rest_waits_for_trust(workspace: Path, user: Path) -> None:
    _claude(workspace, FULL)
    loaded = load_settings(workspace, user, environ={})
    assert loaded.rules == (RuleSet(".claude/settings.json", deny=("read(./.env)", "bash(curl:*)"),
                                    ask=("bash(git push:*)",)),)
    assert loaded.settings.permission_mode == "default" and loaded.add_dirs == ()
    assert not loaded.trusted
    assert ignored_line(loaded.ignored) == (
        '.claude/settings.json: allow rule "bash(npm run test:*)", allow rule "read(~/.zshrc)", '
        f'permission_mode = "accept-edits", additional directory "{workspace.parent / "docs"}", '
        f'additional directory "{Path("~/notes").expanduser()}"')
    trusted = load_settings(workspace, user, environ={}, trusted_hash=changes_hash(loaded.widening))
    assert trusted.trusted
    assert trusted.rules[0].allow == ("bash(npm run test:*)", "read(~/.zshrc)")
    assert trusted.settings.permission_mode == "accept-edits"
    assert trusted.sources["permission_mode"] == ".claude/settings.json"
    assert trusted.add_dirs == (workspace.parent / "docs", Path("~/notes").expanduser())


def test_the_files_apply_after_the_user_and_before_loom_files(workspace: Path, user: Path) -> None:
    _write(user, '[permissions]\ndeny = ["bash(rm:*)"]\n')
    _claude(workspace, {"permissions": {"deny": ["Bash(a)"]}})
    _claude(workspace, {"permissions": {"deny": ["Bash(b)"], "defaultMode": "plan"}}, "settings.local.json")
    _write(workspace / ".loom" / "settings.toml", 'permission_mode = "default"\n[permissions]\ndeny = ["bash(c)"]\n')
    loaded = load_settings(workspace, user, environ={})
    assert [(r.source, r.deny) for r in loaded.rules] == [
        (f"user config ({user})", ("bash(rm:*)",)), (".claude/settings.json", ("bash(a)",)),
        (".claude/settings.local.json", ("bash(b)",)), (".loom/settings.toml", ("bash(c)",))]
    # The local Claude file narrowed the mode to plan; a later project file cannot undo that.
    assert loaded.settings.permission_mode == "plan"


def test_a_stricter_default_mode_applies_untrusted(workspace: Path, user: Path) -> None:
    _claude(workspace, {"permissions": {"defaultMode": "plan"}})
    loaded = load_settings(workspace, user, environ={})
    assert loaded.settings.permission_mode == "plan" and loaded.widening == ()


@pytest.mark.parametrize("permissions, problem", [
    ("deny everything", ".claude/settings.json: permissions: not a JSON object: skipped"),
    ({"deny": "Read(./.env)"}, ".claude/settings.json: permissions.deny: not a list of strings: skipped"),
    ({"allow": [1]}, ".claude/settings.json: permissions.allow: not a list of strings: skipped"),
    ({"additionalDirectories": "../x"},
     ".claude/settings.json: permissions.additionalDirectories: not a list of strings: skipped"),
    ({"defaultMode": "dontAsk"}, ".claude/settings.json: defaultMode 'dontAsk' is not a mode Loom has "
                                 "(default, acceptEdits, plan, bypassPermissions): left out"),
    ({"deny": ["Bash(git * --force)"]}, ".claude/settings.json: deny rule 'Bash(git * --force)': a '*' inside "
                                        "a command cannot be matched exactly; every call of bash(git:*) asks instead"),
])
def test_what_cannot_be_used_is_one_line_each(workspace: Path, user: Path, permissions: object,
                                              problem: str) -> None:
    _claude(workspace, {"permissions": permissions})
    assert load_settings(workspace, user, environ={}).problems == (problem,)


@pytest.mark.parametrize("content, problem", [
    (b"\xff{}", ".claude/settings.json: not UTF-8 text (byte 0xff at position 0): skipped"),
    (b'{"permissions": ', ".claude/settings.json: not valid JSON (line 1, column 17: Expecting value): skipped"),
    (b"[1]", ".claude/settings.json: not a JSON object: skipped"),
    (b"[" * 100_000 + b"]" * 100_000, ".claude/settings.json: nested too deeply to read: skipped"),
], ids=["not-utf8", "bad-json", "not-an-object", "deep"])
def test_a_file_that_cannot_be_read_is_skipped_with_one_line(workspace: Path, user: Path, content: bytes,
                                                             problem: str) -> None:
    path = workspace / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(content)
    _claude(workspace, {"permissions": {"deny": ["Bash(rm:*)"]}}, "settings.local.json")
    loaded = load_settings(workspace, user, environ={})
    assert loaded.problems == (problem,)
    assert loaded.rules == (RuleSet(".claude/settings.local.json", deny=("bash(rm:*)",)),)


def test_a_file_without_permissions_adds_nothing(workspace: Path, user: Path) -> None:
    _claude(workspace, {"hooks": {}, "env": {"A": "b"}})
    loaded = load_settings(workspace, user, environ={})
    assert loaded.rules == () and loaded.widening == () and loaded.problems == ()
