"""``[sandbox]``: only the user turns it off or widens it (flag > LOOM_SANDBOX > their config);
a project file may only tighten it, trusted or not, and what it tried is named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loom_cli.project_trust import ProjectChange
from loom_cli.sandbox_settings import SandboxSettings, refused_line, sandbox_config
from loom_cli.settings import ConfigError, load_settings
from loom_engine.sandbox.config import DEFAULT_DENY_READ_IN_HOME


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return tmp_path / "cfg" / "config.toml"


def test_the_defaults_confine_with_no_network(workspace: Path, user: Path) -> None:
    loaded = load_settings(workspace, user, environ={})
    assert loaded.settings.sandbox == SandboxSettings(mode="auto", network="off", allowed_domains=[],
                                                      allow_write=[], deny_read=[], auto_allow_in_accept_edits=True)
    assert "sandbox.mode" not in loaded.sources and loaded.refused == ()


def test_the_flag_beats_the_environment_which_beats_the_users_config(workspace: Path, user: Path) -> None:
    _write(user, '[sandbox]\nmode = "on"\n')
    from_config = load_settings(workspace, user, environ={})
    assert (from_config.settings.sandbox.mode, from_config.sources["sandbox.mode"]) == ("on", f"user config ({user})")
    from_env = load_settings(workspace, user, environ={"LOOM_SANDBOX": "off"})
    assert (from_env.settings.sandbox.mode, from_env.sources["sandbox.mode"]) == ("off", "LOOM_SANDBOX")
    from_flag = load_settings(workspace, user, environ={"LOOM_SANDBOX": "off"}, sandbox_mode="auto")
    assert (from_flag.settings.sandbox.mode, from_flag.sources["sandbox.mode"]) == ("auto", "--sandbox")


def test_the_user_may_turn_it_off_over_a_projects_stricter_mode(workspace: Path, user: Path) -> None:
    _write(workspace / ".loom" / "settings.toml", '[sandbox]\nmode = "on"\n')
    assert load_settings(workspace, user, environ={}).settings.sandbox.mode == "on"
    assert load_settings(workspace, user, environ={"LOOM_SANDBOX": "off"}).settings.sandbox.mode == "off"
    assert load_settings(workspace, user, environ={}, sandbox_mode="off").settings.sandbox.mode == "off"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_never_turns_it_off_or_widens_it_trusted_or_not(workspace: Path, user: Path,
                                                                  trusted: bool) -> None:
    _write(workspace / ".loom" / "settings.toml",
           '[sandbox]\nmode = "off"\nnetwork = "on"\nallowed_domains = ["evil.example"]\n'
           'allow_write = ["~/.bashrc"]\n')
    _write(workspace / ".loom" / "settings.local.toml", '[sandbox]\nnetwork = "allowlist"\n')
    loaded = load_settings(workspace, user, environ={}, trusted=trusted)
    assert loaded.settings.sandbox == SandboxSettings()
    assert "sandbox.mode" not in loaded.sources and "sandbox.network" not in loaded.sources
    assert loaded.refused == (
        ProjectChange(".loom/settings.toml", "sandbox.mode", "off"),
        ProjectChange(".loom/settings.toml", "sandbox.network", "on"),
        ProjectChange(".loom/settings.toml", "sandbox.allowed_domains", ["evil.example"]),
        ProjectChange(".loom/settings.toml", "sandbox.allow_write", ["~/.bashrc"]),
        ProjectChange(".loom/settings.local.toml", "sandbox.network", "allowlist"))
    # Not part of the trust question: trusting the workspace could never apply them.
    assert all(not change.key.startswith("sandbox") for change in loaded.widening)
    assert refused_line(loaded.refused) == (
        "a project's settings cannot turn the sandbox off or widen it; ignored: .loom/settings.toml: "
        'sandbox.mode = "off", sandbox.network = "on", sandbox.allowed_domains = ["evil.example"], '
        'sandbox.allow_write = ["~/.bashrc"]; .loom/settings.local.toml: sandbox.network = "allowlist"')


def test_a_project_cannot_widen_what_the_user_narrowed(workspace: Path, user: Path) -> None:
    _write(user, '[sandbox]\nmode = "on"\nauto_allow_in_accept_edits = false\n')
    _write(workspace / ".loom" / "settings.toml", '[sandbox]\nmode = "auto"\nauto_allow_in_accept_edits = true\n')
    loaded = load_settings(workspace, user, environ={}, trusted=True)
    assert (loaded.settings.sandbox.mode, loaded.settings.sandbox.auto_allow_in_accept_edits) == ("on", False)
    assert [change.key for change in loaded.refused] == ["sandbox.mode", "sandbox.auto_allow_in_accept_edits"]


def test_a_project_may_tighten_it(workspace: Path, user: Path) -> None:
    _write(user, '[sandbox]\nnetwork = "allowlist"\nallowed_domains = ["pypi.org"]\ndeny_read = ["~/notes"]\n')
    _write(workspace / ".loom" / "settings.toml",
           '[sandbox]\nmode = "on"\nnetwork = "off"\ndeny_read = ["secrets", "~/notes"]\n'
           'auto_allow_in_accept_edits = false\nallowed_domains = []\n')
    loaded = load_settings(workspace, user, environ={})
    sandbox = loaded.settings.sandbox
    assert (sandbox.mode, sandbox.network, sandbox.auto_allow_in_accept_edits) == ("on", "off", False)
    assert sandbox.allowed_domains == ["pypi.org"]  # the user's list stays; the network is off anyway
    assert sandbox.deny_read == ["~/notes", "secrets"]
    assert loaded.sources["sandbox.deny_read"] == f"user config ({user}) + .loom/settings.toml"
    assert loaded.sources["sandbox.mode"] == ".loom/settings.toml"
    assert loaded.refused == ()


def test_the_local_file_cannot_undo_the_project_files_tightening(workspace: Path, user: Path) -> None:
    _write(workspace / ".loom" / "settings.toml", '[sandbox]\nmode = "on"\n')
    _write(workspace / ".loom" / "settings.local.toml", '[sandbox]\nmode = "auto"\n')
    loaded = load_settings(workspace, user, environ={})
    assert loaded.settings.sandbox.mode == "on"
    assert loaded.refused == (ProjectChange(".loom/settings.local.toml", "sandbox.mode", "auto"),)


@pytest.mark.parametrize("text, fragment", [
    ('[sandbox]\nmode = "maybe"\n', "sandbox.mode"),
    ('[sandbox]\nnetwork = "some"\n', "sandbox.network"),
    ('[sandbox]\nallowed_domains = ["https://pypi.org/simple"]\n', '"https://pypi.org/simple" is a URL'),
    ('[sandbox]\nallowed_domains = ["pypi.org", "*"]\n', '"*" would allow every host'),
    ('[sandbox]\nallowed_domains = ["*.com"]\n', '"*.com" covers a whole top-level domain'),
    ('[sandbox]\nallowed_domains = ["pypi..org"]\n', '"pypi..org"'),
    ('[sandbox]\nallow_write = [""]\n', "is not a path"),
    ('[sandbox]\nwritable = ["/"]\n', "sandbox.writable"),
])
def test_a_bad_sandbox_setting_names_the_file_and_the_key(workspace: Path, user: Path, text: str,
                                                         fragment: str) -> None:
    _write(user, text)
    with pytest.raises(ConfigError) as info:
        load_settings(workspace, user, environ={})
    assert str(user) in str(info.value) and fragment in str(info.value) and "\n" not in str(info.value)


def test_a_bad_loom_sandbox_value_names_the_variable_and_the_choices(workspace: Path, user: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(workspace, user, environ={"LOOM_SANDBOX": "no"})
    assert str(info.value) == "LOOM_SANDBOX='no': not a sandbox mode (use auto, on, off)"
    assert load_settings(workspace, user, environ={"LOOM_SANDBOX": " ON "}).settings.sandbox.mode == "on"


def test_the_config_holds_the_default_unreadable_paths_then_the_users(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "repo"
    own = (tmp_path / "cfg", tmp_path / "data")
    chosen = SandboxSettings(network="allowlist", allowed_domains=["pypi.org"], allow_write=["~/.cache/pip", "build"],
                             deny_read=["~/.ssh", "secrets", "/etc/shadow"], auto_allow_in_accept_edits=False)
    config = sandbox_config(chosen, root, home=home, own_folders=own)
    defaults = tuple(home / name for name in DEFAULT_DENY_READ_IN_HOME)
    assert config.deny_read == (*defaults, *own, root / "secrets", Path("/etc/shadow"))  # ~/.ssh once
    assert config.allow_write == (home / ".cache" / "pip", root / "build")
    assert (config.mode, config.network, config.allowed_domains) == ("auto", "allowlist", ("pypi.org",))
    assert config.auto_allow_in_accept_edits is False


def test_loom_config_shows_the_sandbox_settings_their_sources_and_what_a_project_tried(
        workspace: Path, tmp_path: Path) -> None:
    from tests.doubles.loom_command import loom

    _write(tmp_path / "config" / "config.toml", '[sandbox]\nnetwork = "allowlist"\nallowed_domains = ["pypi.org"]\n')
    _write(workspace / ".loom" / "settings.toml", '[sandbox]\nmode = "off"\ndeny_read = ["secrets"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(LOOM_DATA_DIR=str(tmp_path / "data"), LOOM_CONFIG_DIR=str(tmp_path / "config"), LOOM_SANDBOX="on")
    shown = loom(["config"], workspace, env)
    assert shown.returncode == 0, shown.stderr
    user = f"user config ({tmp_path / 'config' / 'config.toml'})"
    lines = shown.stdout.splitlines()
    for expected in ("  sandbox.mode = 'on'  (LOOM_SANDBOX)",
                     f"  sandbox.network = 'allowlist'  ({user})",
                     f"  sandbox.allowed_domains = ['pypi.org']  ({user})",
                     "  sandbox.deny_read = ['secrets']  (.loom/settings.toml)",
                     "  sandbox.allow_write = []  (default)",
                     "  sandbox.mode = 'off'  (.loom/settings.toml, ignored: a project cannot turn the sandbox off "
                     "or widen it)"):
        assert expected in lines, shown.stdout
