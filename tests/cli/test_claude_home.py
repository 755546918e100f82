"""Claude Code's user folder (~/.claude) read as the user's own: settings, hooks, env,
catalogs, the switch that turns it off, and where the listings say each item came from."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loom_cli.claude_folder import find_claude_home
from loom_cli.claude_home import apply_claude_env
from loom_cli.hook_setup import plan_hooks
from loom_cli.settings import load_settings, read_settings_files
from loom_engine.commands.catalog import CommandCatalog
from loom_engine.skills.catalog import SkillCatalog
from loom_engine.subagents.definitions import AgentCatalog
from tests.doubles.loom_command import isolate_loom


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A fake HOME whose ~/.claude holds a Claude Code user's setup; Loom's folders are tmp_path's."""
    isolate_loom(monkeypatch, tmp_path)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    fake_home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(fake_home))
    claude = fake_home / ".claude"
    write(claude / "settings.json", json.dumps({
        "permissions": {"allow": ["Bash(make test:*)"], "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
        "env": {"MY_TEAM_FLAG": "on", "RETRIES": 3},
    }))
    write(claude / "CLAUDE.md", "Claude home instructions")
    write(claude / "agents" / "reviewer.md", "---\nname: reviewer\ndescription: from claude\n---\nReview.")
    write(claude / "agents" / "planner.md", "---\nname: planner\ndescription: claude planner\n---\nPlan.")
    write(claude / "commands" / "ship.md", "---\ndescription: claude ship\n---\nShip it.")
    write(claude / "skills" / "tidy" / "SKILL.md", "---\nname: tidy\ndescription: claude tidy\n---\nTidy.")
    return fake_home


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir(exist_ok=True)
    return root


def test_the_folder_is_claude_config_dir_else_home(monkeypatch: pytest.MonkeyPatch, home: Path,
                                                  tmp_path: Path) -> None:
    config = tmp_path / "config" / "config.toml"
    assert find_claude_home(config) == home / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert find_claude_home(config) == tmp_path / "elsewhere"


def test_user_settings_json_counts_as_the_users_own(home: Path, tmp_path: Path) -> None:
    loaded = load_settings(workspace(tmp_path), tmp_path / "config" / "config.toml")
    by_source = {rule_set.source: rule_set for rule_set in loaded.rules}
    mine = by_source["~/.claude/settings.json"]
    assert mine.allow == ("bash(make test:*)",)  # allowed without any trust question
    assert mine.deny == ("read(./.env)",)
    assert loaded.settings.permission_mode == "accept-edits"
    assert loaded.sources["permission_mode"] == "~/.claude/settings.json"
    assert not loaded.widening  # nothing of it is the project's to trust


def test_loom_config_wins_over_claude_settings(home: Path, tmp_path: Path) -> None:
    write(tmp_path / "config" / "config.toml", 'permission_mode = "default"\n')
    loaded = load_settings(workspace(tmp_path), tmp_path / "config" / "config.toml")
    assert loaded.settings.permission_mode == "default"
    assert loaded.sources["permission_mode"].startswith("user config")


def test_claude_user_hooks_run_without_a_trust_question(home: Path, tmp_path: Path) -> None:
    root = workspace(tmp_path)
    plan = plan_hooks(root, read_settings_files(root, tmp_path / "config" / "config.toml"), trusted=())
    assert [(h.command, h.source, plan.state(h)) for h in plan.found] == \
        [("guard.sh", "~/.claude/settings.json", "user")]
    assert plan.use.hooks and not plan.untrusted


def test_env_is_set_as_claude_code_sets_it(home: Path) -> None:
    environ: dict[str, str] = {"MY_TEAM_FLAG": "off"}
    assert apply_claude_env(home / ".claude", environ) == []
    assert environ == {"MY_TEAM_FLAG": "on", "RETRIES": "3"}


def test_the_switch_in_the_user_config_turns_it_all_off(home: Path, tmp_path: Path) -> None:
    config = write(tmp_path / "config" / "config.toml", "[claude]\nread_user_folder = false\n")
    assert find_claude_home(config) is None
    loaded = load_settings(workspace(tmp_path), config)
    assert all(rule_set.source != "~/.claude/settings.json" for rule_set in loaded.rules)
    assert loaded.settings.permission_mode == "default"


def test_the_environment_variable_turns_it_off(monkeypatch: pytest.MonkeyPatch, home: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("LOOM_READ_CLAUDE_HOME", "0")
    assert find_claude_home(tmp_path / "config" / "config.toml") is None
    loaded = load_settings(workspace(tmp_path), tmp_path / "config" / "config.toml")
    assert loaded.settings.permission_mode == "default"


def test_a_project_cannot_switch_it(home: Path, tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(root / ".loom" / "settings.toml", "[claude]\nread_user_folder = false\n")
    loaded = load_settings(root, tmp_path / "config" / "config.toml", trusted=True)
    assert loaded.settings.permission_mode == "accept-edits"  # still the user's ~/.claude setting
    assert any("[claude] is read from the user config only: ignored" in p for p in loaded.problems)


def test_catalogs_read_the_claude_folder_and_loom_wins_a_name_clash(home: Path, tmp_path: Path) -> None:
    claude = home / ".claude"
    config = tmp_path / "config"
    root = workspace(tmp_path)
    write(config / "agents" / "reviewer.md", "---\nname: reviewer\ndescription: from loom\n---\nReview.")
    write(config / "commands" / "ship.md", "---\ndescription: loom ship\n---\nShip.")
    write(config / "skills" / "tidy" / "SKILL.md", "---\nname: tidy\ndescription: loom tidy\n---\nTidy.")
    agents = AgentCatalog.discover(root, user_config_dir=config, claude_home=claude)
    reviewer, planner = agents.get("reviewer"), agents.get("planner")
    assert reviewer is not None and (reviewer.description, reviewer.source) == ("from loom", "user")
    assert planner is not None and planner.source == "~/.claude" and not planner.in_project
    assert [(a.name, a.source) for a in agents.overridden] == [("reviewer", "~/.claude")]
    commands = CommandCatalog.discover(root, user_config_dir=config, claude_home=claude)
    ship = commands.get("ship")
    assert ship is not None and ship.description == "loom ship"
    skills = SkillCatalog.discover(root, user_config_dir=config, builtin_dir=tmp_path / "none", claude_home=claude)
    tidy = skills.get("tidy")
    assert tidy is not None and (tidy.description, tidy.source) == ("loom tidy", "user")
    assert [(s.name, s.source) for s in skills.overridden] == [("tidy", "~/.claude")]
    alone = SkillCatalog.discover(root, user_config_dir=tmp_path / "empty", builtin_dir=tmp_path / "none",
                                  claude_home=claude)
    assert [(s.name, s.source) for s in alone] == [("tidy", "~/.claude")]


def test_a_project_item_still_wins_over_both(home: Path, tmp_path: Path) -> None:
    root = workspace(tmp_path)
    write(root / ".claude" / "agents" / "planner.md", "---\nname: planner\ndescription: project\n---\nPlan.")
    agents = AgentCatalog.discover(root, user_config_dir=tmp_path / "config", claude_home=home / ".claude")
    planner = agents.get("planner")
    assert planner is not None and planner.source == ".claude"


def test_listing_commands_name_the_source(home: Path, tmp_path: Path) -> None:
    import subprocess

    from tests.doubles.loom_command import LOOM_SCRIPT

    root = workspace(tmp_path)
    env = dict(os.environ)
    skills = subprocess.run([*LOOM_SCRIPT, "skills"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert any(line.split()[:2] == ["tidy", "~/.claude"] for line in skills.stdout.splitlines()), skills.stdout
    agents = subprocess.run([*LOOM_SCRIPT, "agents"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert any(line.split()[:2] == ["planner", "~/.claude"] for line in agents.stdout.splitlines()), agents.stdout
    config = subprocess.run([*LOOM_SCRIPT, "config"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert f"claude folder: {home / '.claude'}: CLAUDE.md" in config.stdout
    assert f"found   {home / '.claude' / 'settings.json'}" in config.stdout
    assert "(~/.claude/settings.json)" in config.stdout  # a rule's source
    assert f"  {home / '.claude' / 'CLAUDE.md'}  (user)" in config.stdout.splitlines()
    off = subprocess.run([*LOOM_SCRIPT, "skills"], cwd=root, env={**env, "LOOM_READ_CLAUDE_HOME": "0"},
                         capture_output=True, text=True, timeout=60)
    assert "~/.claude" not in off.stdout


def test_the_variable_wins_over_the_user_config_either_way(monkeypatch: pytest.MonkeyPatch, home: Path,
                                                         tmp_path: Path) -> None:
    config = write(tmp_path / "config" / "config.toml", "[claude]\nread_user_folder = false\n")
    monkeypatch.setenv("LOOM_READ_CLAUDE_HOME", "1")
    assert find_claude_home(config) == home / ".claude"
    monkeypatch.setenv("LOOM_READ_CLAUDE_HOME", "off")
    assert find_claude_home(tmp_path / "config" / "missing.toml") is None
