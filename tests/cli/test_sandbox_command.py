"""`loom sandbox`: whether commands run confined here and by what (or why not, and the fix),
what they may write and read, and the network; exit 0 in every case, and `-o json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loom_cli.hook_setup import read_hook_plan
from loom_cli.sandbox_command import describe_sandbox
from loom_cli.workspace_records import WorkspaceRecords
from loom_engine.sandbox import SandboxConfig, open_sandbox
from loom_engine.workspace import Workspace
from tests.doubles import no_sandbox
from tests.doubles.loom_command import LOOM, isolate_loom, loom


def _confines_here(tmp_path: Path) -> bool:
    sandbox = open_sandbox(SandboxConfig(), Workspace.at(tmp_path))
    sandbox.close()
    return sandbox.status.backend == "bubblewrap"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(LOOM_DATA_DIR=str(tmp_path / "data"), LOOM_CONFIG_DIR=str(tmp_path / "config"), **extra)
    return env


@pytest.fixture
def confined(tmp_path: Path) -> None:
    if not _confines_here(tmp_path):
        pytest.skip("bubblewrap cannot confine commands on this machine")


@pytest.mark.usefixtures("confined")
def test_on_it_names_the_backend_and_what_is_writable_read_only_and_unreadable(workspace: Path,
                                                                              tmp_path: Path) -> None:
    done = loom(["sandbox"], workspace, _env(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("sandbox: on (bubblewrap ") and lines[0].endswith("), network off")
    assert lines[1] == "  mode        auto (default)"
    assert f"  writable    {workspace} (the workspace), a private /tmp" in lines
    assert "  read-only   everything else, and in there: .git/hooks, .git/config, .loom, .claude" in lines
    unreadable = next(line for line in lines if line.startswith("  unreadable  "))
    assert "~/.ssh" in unreadable and str(tmp_path / "config") in unreadable and str(tmp_path / "data") in unreadable
    assert lines[-1].startswith("  network     off: no connections")
    assert done.stderr == ""


@pytest.mark.usefixtures("confined")
def test_json_carries_the_status_and_the_places(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('[sandbox]\nallow_write = ["~/.cache/pip"]\n'
                                                     'deny_read = ["secrets"]\n')
    (tmp_path / "home" / ".cache" / "pip").mkdir(parents=True)
    done = loom(["sandbox", "-o", "json"], workspace, _env(tmp_path, HOME=str(tmp_path / "home")))
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["mode"], shown["active"], shown["backend"], shown["network"]) == ("auto", True, "bubblewrap", "off")
    assert shown["mode_source"] == "default" and shown["reason"] == "" and shown["fix"] == ""
    assert shown["writable"] == [str(workspace), str(tmp_path / "home" / ".cache" / "pip")]
    workspace_read_only = [str(workspace / name) for name in (".git/hooks", ".git/config", ".loom", ".claude")]
    assert shown["read_only"][:4] == workspace_read_only
    assert shown["unreadable"][0] == str(tmp_path / "home" / ".ssh")
    assert shown["unreadable"][-3:] == [str(tmp_path / "config"), str(tmp_path / "data"), str(workspace / "secrets")]


def test_off_says_it_is_the_users_choice_and_by_which_setting(workspace: Path, tmp_path: Path) -> None:
    done = loom(["sandbox"], workspace, _env(tmp_path, LOOM_SANDBOX="off"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["sandbox: off (your choice)", "  mode        off (LOOM_SANDBOX)",
                                        "  commands run without walls; unset LOOM_SANDBOX to confine them"]


@pytest.mark.skipif(not no_sandbox.available(), reason="cannot make a machine without a sandbox here")
@pytest.mark.parametrize("mode, consequence", [("auto", "commands run unconfined and ask first"),
                                               ("on", "commands are refused")])
def test_unavailable_it_says_why_and_the_fix_and_still_exits_0(workspace: Path, tmp_path: Path, mode: str,
                                                              consequence: str) -> None:
    import subprocess

    done = subprocess.run([*no_sandbox.WITHOUT_SANDBOX, *LOOM, "sandbox"], cwd=workspace, text=True,
                          env=_env(tmp_path, LOOM_SANDBOX=mode), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.startswith("sandbox: unavailable — user namespaces are turned off (user.max_user_namespaces = 0")
    assert f"; {consequence}. Fix: sudo sysctl -w user.max_user_namespaces=" in first
    assert rest[0] == f"  mode        {mode} (LOOM_SANDBOX)"
    as_json = subprocess.run([*no_sandbox.WITHOUT_SANDBOX, *LOOM, "sandbox", "-o", "json"], cwd=workspace,
                             text=True, env=_env(tmp_path, LOOM_SANDBOX=mode), capture_output=True, timeout=60)
    shown = json.loads(as_json.stdout)
    assert (shown["active"], shown["backend"], shown["mode"]) == (False, None, mode)
    assert "max_user_namespaces" in shown["reason"] and shown["fix"].startswith("sudo sysctl")


def test_a_project_that_turns_it_off_is_named_and_ignored(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".loom").mkdir()
    (workspace / ".loom" / "settings.toml").write_text('[sandbox]\nmode = "off"\n')
    done = loom(["sandbox", "-o", "json"], workspace, _env(tmp_path))
    assert done.returncode == 0 and json.loads(done.stdout)["mode"] == "auto"
    assert done.stderr == ("loom: warning: a project's settings cannot turn the sandbox off or widen it; ignored: "
                           '.loom/settings.toml: sandbox.mode = "off"\n')


def test_a_bad_setting_is_one_line_and_exit_1(workspace: Path, tmp_path: Path) -> None:
    done = loom(["sandbox"], workspace, _env(tmp_path, LOOM_SANDBOX="sometimes"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "loom: LOOM_SANDBOX='sometimes': not a sandbox mode (use auto, on, off)\n"


@pytest.mark.usefixtures("confined")
def test_a_project_hook_s_folder_is_read_only_before_and_after_the_trust(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_loom(monkeypatch, tmp_path)
    (workspace / "ci" / "hooks").mkdir(parents=True)
    (workspace / "ci" / "hooks" / "guard.sh").write_text("#!/bin/sh\nexit 0\n")
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "sh ci/hooks/guard.sh"}]}]}}))
    records = WorkspaceRecords(tmp_path / "data")
    plan = read_hook_plan(workspace, tmp_path / "config" / "config.toml", records)
    untrusted = describe_sandbox(workspace).facts.read_only
    records.trust_hooks(workspace, plan.trust_keys(plan.untrusted))
    trusted = describe_sandbox(workspace).facts.read_only
    # Read-only before the yes too: otherwise a yes at the next start would trust whatever a
    # command wrote there meanwhile.
    assert workspace / "ci" / "hooks" in untrusted
    assert workspace / "ci" / "hooks" in trusted


@pytest.mark.usefixtures("confined")
def test_an_allow_list_shows_its_domains_in_the_line_the_network_row_and_json(workspace: Path,
                                                                              tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('[sandbox]\nnetwork = "allowlist"\n'
                                                     'allowed_domains = ["pypi.org", "*.github.com"]\n')
    done = loom(["sandbox"], workspace, _env(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("), network only pypi.org, *.github.com")
    assert lines[-1] == ("  network     only pypi.org, *.github.com, through Loom's proxy "
                         "(http and https on ports 80 and 443)")
    shown = json.loads(loom(["sandbox", "-o", "json"], workspace, _env(tmp_path)).stdout)
    assert (shown["network"], shown["allowed_domains"]) == ("allowlist", ["pypi.org", "*.github.com"])


def test_a_bad_allowed_domain_is_one_line_naming_it(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('[sandbox]\nnetwork = "allowlist"\n'
                                                     'allowed_domains = ["pypi.org", "https://evil.example/x"]\n')
    done = loom(["sandbox"], workspace, _env(tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"loom: {tmp_path / 'config' / 'config.toml'}: sandbox.allowed_domains: ")
    assert '"https://evil.example/x" is a URL; write the host name alone' in done.stderr
