"""Rule layers from config files, and "always allow" saved to settings.local.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from loom_engine.permissions.manager import PermissionManager, RuleLayer, load_rule_layers
from loom_engine.permissions.targets import FileAccess

from .conftest import Env, bash


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_layers_come_from_user_project_and_local_files(env: Env, tmp_path: Path) -> None:
    user = _write(tmp_path / "cfg" / "config.toml",
                  '[permissions]\nallow = ["bash(make:*)"]\ndeny = ["bash(git push:*)"]\n')
    _write(env.root / ".loom" / "settings.toml",
           '[permissions]\nask = ["bash(make deploy:*)"]\n[other]\nx = 1\n')
    _write(env.root / ".loom" / "settings.local.toml", '[permissions]\nallow = ["bash(npm test:*)"]\n')
    layers = load_rule_layers(env.ws, user)
    assert [layer.source for layer in layers] == [
        f"user config ({user})", ".loom/settings.toml", ".loom/settings.local.toml"]
    assert layers[0].allow == ("bash(make:*)",) and layers[0].deny == ("bash(git push:*)",)
    assert layers[1].ask == ("bash(make deploy:*)",)
    pm = PermissionManager(env.ws, layers=layers)
    assert bash(pm, "make build").behavior == "allow"
    assert bash(pm, "make deploy prod").behavior == "ask"  # project ask beats user allow
    assert bash(pm, "git push").behavior == "deny"
    assert bash(pm, "npm test").behavior == "allow"
    decision = bash(pm, "make build")
    assert decision.reason == f"rule bash(make:*) from user config ({user})"


def test_user_config_under_home_is_shown_with_a_tilde(env: Env, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    user = _write(tmp_path / ".config" / "loom" / "config.toml", "[permissions]\nallow = []\n")
    (layer,) = load_rule_layers(env.ws, user)
    assert layer.source == "user config (~/.config/loom/config.toml)"


def test_missing_files_are_skipped(env: Env, tmp_path: Path) -> None:
    assert load_rule_layers(env.ws, tmp_path / "nope.toml") == []
    assert load_rule_layers(env.ws, None) == []
    _write(env.root / ".loom" / "settings.toml", "[model]\nname = 'x'\n")
    assert load_rule_layers(env.ws, None) == [RuleLayer(".loom/settings.toml")]


@pytest.mark.parametrize("text, fragment", [
    ("[permissions\nallow = 1", "invalid TOML"),
    ("permissions = 3\n", "must be a table"),
    ("[permissions]\nallow = 'bash'\n", "allow must be a list of strings"),
    ("[permissions]\ndeny = [1]\n", "deny must be a list of strings"),
    ("[permissions]\nask = ['bash(']\n", "missing ')'"),
])
def test_malformed_settings_name_the_file_and_the_problem(env: Env, text: str, fragment: str) -> None:
    path = _write(env.root / ".loom" / "settings.toml", text)
    with pytest.raises(ValueError) as info:
        load_rule_layers(env.ws, None)
    message = str(info.value)
    assert str(path) in message and fragment in message
    assert "\n" not in message


def test_non_utf8_settings(env: Env) -> None:
    path = env.root / ".loom" / "settings.local.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe[permissions]")
    with pytest.raises(ValueError, match="not UTF-8"):
        load_rule_layers(env.ws, None)


def test_allow_for_project_creates_the_file(env: Env) -> None:
    pm = PermissionManager(env.ws)
    assert bash(pm, "make test").behavior == "ask"
    pm.allow_for_project(["bash(make test)", "edit_file(src/**)"])
    path = env.root / ".loom" / "settings.local.toml"
    assert tomllib.loads(path.read_text())["permissions"]["allow"] == [
        "bash(make test)", "edit_file(src/**)"]
    assert bash(pm, "make test").behavior == "allow"
    assert ("allow", "bash(make test)", ".loom/settings.local.toml") in pm.effective_rules()
    # A new session reads them back.
    again = PermissionManager(env.ws, layers=load_rule_layers(env.ws, None))
    assert bash(again, "make test").behavior == "allow"


def test_allow_for_project_keeps_existing_content(env: Env) -> None:
    path = _write(env.root / ".loom" / "settings.local.toml",
                  'model = "claude"\n\n[permissions]\nallow = ["bash(ls:*)"]\ndeny = ["bash(rm:*)"]\n'
                  '\n[ui]\ntheme = "dark"\n')
    pm = PermissionManager(env.ws)
    pm.allow_for_project(["bash(make test)", "bash(ls:*)"])
    pm.allow_for_project(["bash(make test)"])
    data = tomllib.loads(path.read_text())
    assert data["model"] == "claude"
    assert data["ui"] == {"theme": "dark"}
    assert data["permissions"]["deny"] == ["bash(rm:*)"]
    assert data["permissions"]["allow"] == ["bash(ls:*)", "bash(make test)"]


def test_allow_for_project_keeps_comments_and_layout(env: Env) -> None:
    original = ('# my project rules\n[permissions]\n# reviewed by the team\n'
                'allow = ["bash(ls:*)"]  # listing is harmless\n\n[ui]\ntheme = "dark"  # easier on the eyes\n')
    path = _write(env.root / ".loom" / "settings.local.toml", original)
    PermissionManager(env.ws).allow_for_project(["bash(make test)"])
    text = path.read_text()
    for comment in ("# my project rules", "# reviewed by the team", "# listing is harmless",
                    "# easier on the eyes"):
        assert comment in text
    assert text.index("[permissions]") < text.index("[ui]")
    assert tomllib.loads(text)["permissions"]["allow"] == ["bash(ls:*)", "bash(make test)"]


def test_allow_for_project_adds_the_table_to_a_file_without_one(env: Env) -> None:
    path = _write(env.root / ".loom" / "settings.local.toml", '# just a model\nmodel = "x"\n')
    PermissionManager(env.ws).allow_for_project(["bash(make test)"])
    text = path.read_text()
    assert text.startswith('# just a model\nmodel = "x"\n')
    assert tomllib.loads(text) == {"model": "x", "permissions": {"allow": ["bash(make test)"]}}


def test_allow_for_project_refuses_bad_input_without_touching_the_file(env: Env) -> None:
    pm = PermissionManager(env.ws)
    path = env.root / ".loom" / "settings.local.toml"
    with pytest.raises(ValueError, match="missing"):
        pm.allow_for_project(["bash(make test)", "bash("])
    assert not path.exists()
    _write(path, "[permissions\n")
    with pytest.raises(ValueError, match="invalid TOML"):
        pm.allow_for_project(["bash(make test)"])
    assert path.read_text() == "[permissions\n"
    assert bash(pm, "make test").behavior == "ask"


def test_custom_local_settings_path(env: Env, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "local.toml"
    pm = PermissionManager(env.ws, local_settings_path=target)
    pm.allow_for_project(["read_file(/opt/**)"])
    assert tomllib.loads(target.read_text())["permissions"]["allow"] == ["read_file(/opt/**)"]
    assert pm.check("read_file", FileAccess(("/opt/x",), False), is_read_only=True).behavior == "allow"


def test_child_saves_through_the_parent(env: Env) -> None:
    parent = PermissionManager(env.ws)
    parent.child().allow_for_project(["bash(make test)"])
    assert bash(parent, "make test").behavior == "allow"
    assert (env.root / ".loom" / "settings.local.toml").exists()
