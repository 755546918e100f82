"""Issue 19 §1: project hooks and project commands' `` !`cmd` `` run inside the sandbox;
mode ``on`` with no working sandbox runs none of them; a command's processes end with it.

Item 2.1 of the issue shows why hooks need walls: trust pins the files a hook names,
not what those files source or run. Confined, a trusted hook that was walked around
can still do no more than the model's own bash.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.commands.invoke import Invocation, run_invocation
from loom_engine.config import AgentConfig
from loom_engine.events import AgentEvent, HookRan, ToolFinished
from loom_engine.hooks.config import HookCommand, HookSet
from loom_engine.hooks.engine import HookEngine
from loom_engine.parts import AgentParts
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.sandbox import Machine, Sandbox, SandboxConfig, open_sandbox
from loom_engine.sandbox.status import Backend
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import BACKENDS, bash, failing_bwrap, real_sandbox, sysctl_tree, tool_context


def _refusing(root: Path, tmp_path: Path) -> Sandbox:
    """Mode on, on a machine where bubblewrap is refused and Landlock is not tried."""
    machine = Machine(backends=("bubblewrap",), bwrap=failing_bwrap(tmp_path / "bin"),
                      sysctl_root=sysctl_tree(tmp_path / "sys", {"kernel/apparmor_restrict_unprivileged_userns": "1"}))
    sandbox = open_sandbox(SandboxConfig(mode="on"), Workspace.at(root), machine=machine)
    assert sandbox.status.refuses_commands
    return sandbox


async def _fire(root: Path, hook: HookCommand, sandbox: Sandbox) -> list[HookRan]:
    events: list[AgentEvent] = []
    await HookEngine(HookSet((hook,)), root, sandbox=sandbox).fire("Stop", {}, emit=events.append, stamp=dict)
    return [e for e in events if isinstance(e, HookRan)]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_project_hook_runs_inside(lab: tuple[Path, Path], backend: Backend) -> None:
    root, outside = lab
    sandbox = real_sandbox(Workspace.at(root), backend)
    (root / "out").mkdir()  # under Landlock a command cannot add entries at the workspace's top level
    script = f"touch {outside}/from-hook; echo inside > out/hook-wrote.txt; exit 0"
    [ran] = await _fire(root, HookCommand("Stop", "", script, source=".loom/settings.toml", in_project=True), sandbox)
    assert ran.outcome == "ok", ran
    assert (root / "out" / "hook-wrote.txt").read_text() == "inside\n"
    assert not (outside / "from-hook").exists()


async def test_the_users_own_hook_is_not_confined(lab: tuple[Path, Path]) -> None:
    root, outside = lab
    sandbox = real_sandbox(Workspace.at(root), "bubblewrap")
    hook = HookCommand("Stop", "", f"touch {outside}/from-user-hook", source="user config", in_project=False)
    [ran] = await _fire(root, hook, sandbox)
    assert ran.outcome == "ok" and (outside / "from-user-hook").exists()


async def test_mode_on_without_a_sandbox_runs_no_project_hook(lab: tuple[Path, Path], tmp_path: Path) -> None:
    root, outside = lab
    hook = HookCommand("Stop", "", f"touch {outside}/ran", source=".claude/settings.json", in_project=True,
                       fail_closed=True)
    [ran] = await _fire(root, hook, _refusing(root, tmp_path))
    assert not (outside / "ran").exists()
    assert "sandbox is required (mode on)" in ran.message and "AppArmor" in ran.message


async def test_mode_on_without_a_sandbox_refuses_bash(lab: tuple[Path, Path], tmp_path: Path) -> None:
    root, outside = lab
    sandbox = _refusing(root, tmp_path)
    out = await bash(tool_context(Workspace.at(root), sandbox), f"touch {outside}/ran")
    assert out.is_error and out.content.startswith("Not run: the sandbox is required (sandbox mode on)")
    assert "AppArmor" in out.content and "Fix: " in out.content
    assert not (outside / "ran").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_project_commands_shell_snippet_runs_inside(lab: tuple[Path, Path], backend: Backend) -> None:
    root, outside = lab
    workspace = Workspace.at(root)
    permissions = PermissionManager(workspace, mode="bypass", layers=[RuleLayer("cli", allow=("bash",))])
    agent = Agent(AgentConfig(model="test-model", interactive=False),
                  AgentParts(provider=ScriptedProvider([{"text": "done"}, {"text": "done"}]), tools=default_tools(),
                             workspace=workspace, permissions=permissions, sandbox=real_sandbox(workspace, backend)),
                  system_prompt="test")
    body = f"Status: !`touch {outside}/from-command; echo snippet-ran`"
    project = Invocation("st", "", "/st", "command", body, in_project=True)
    events = [e async for e in run_invocation(agent, project)]
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert "snippet-ran" in finished.content
    assert not (outside / "from-command").exists()
    # The user's own command (their commands folder) runs its lines as they are, like their hooks.
    [e async for e in run_invocation(agent, Invocation("st", "", "/st", "command", body))]
    assert (outside / "from-command").exists()


def _alive(tag: str) -> list[int]:
    """Processes on the host whose command line carries ``tag``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if tag.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("backend", BACKENDS)
async def test_background_jobs_end_with_the_command(lab: tuple[Path, Path], backend: Backend) -> None:
    root, _ = lab
    ctx = tool_context(Workspace.at(root), real_sandbox(Workspace.at(root), backend))
    tag = f"31{os.getpid()}.5"
    out = await bash(ctx, f"sleep {tag} & setsid sleep {tag} & nohup sleep {tag} >/dev/null 2>&1 & echo started")
    assert "started" in out.content and "Exit code: 0" in out.content
    assert _alive(tag) == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_timeout_ends_every_process(lab: tuple[Path, Path], backend: Backend) -> None:
    root, _ = lab
    ctx = tool_context(Workspace.at(root), real_sandbox(Workspace.at(root), backend))
    tag = f"27{os.getpid()}.5"
    out = await bash(ctx, f"setsid sleep {tag} & sleep {tag}", timeout=1)
    assert "Timed out after 1 s" in out.content
    assert _alive(tag) == []


def test_project_commands_and_skills_are_marked_for_the_sandbox(tmp_path: Path) -> None:
    from loom_engine.commands.catalog import CustomCommand
    from loom_engine.commands.invoke import from_command, from_skill
    from loom_engine.skills.catalog import Skill

    (tmp_path / "c.md").write_text("!`date`\n")
    (tmp_path / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n!`date`\n")
    for source, confined in (("project", True), ("user", False)):
        command = CustomCommand(name="c", description="", path=tmp_path / "c.md", source=source)
        assert from_command(command, "", "/c").in_project is confined
    for source, confined in (("project", True), ("user", False), ("builtin", False)):
        skill = Skill(name="s", description="d", path=tmp_path / "SKILL.md", source=source)
        assert from_skill(skill, "", "/s").in_project is confined
