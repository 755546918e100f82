"""Sandboxes for tests: a real one of a chosen backend, and machines where it cannot start.

``real_sandbox`` opens the backend for real and skips the test (naming why) on a
machine where it cannot work; ``failing_bwrap`` is a ``bwrap`` program that fails the
way bubblewrap does under Ubuntu's AppArmor rule, and ``sysctl_tree`` the kernel
settings the classification reads, so the unavailable path is exercised without
changing the machine.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from builtin_tools.bash import BashInput, BashTool
from loom_engine.execution import CancelToken
from loom_engine.sandbox import Machine, Sandbox, SandboxConfig, open_sandbox
from loom_engine.sandbox.status import Backend
from loom_engine.tools.base import ToolContext, ToolOutput, ToolSessionState
from loom_engine.workspace import Workspace

BACKENDS: tuple[Backend, ...] = ("bubblewrap", "landlock")

# What bwrap prints when AppArmor refuses its user namespace (Ubuntu 24.04).
APPARMOR_REFUSAL = "bwrap: setting up uid map: Permission denied"


def real_sandbox(workspace: Workspace, backend: Backend, config: SandboxConfig | None = None,
                 protected: Sequence[Path] = (), machine: Machine | None = None) -> Sandbox:
    """``machine``: other test seams (the proxy's resolver); its backends are replaced by ``backend``."""
    sandbox = open_sandbox(config or SandboxConfig(), workspace, protected=protected,
                           machine=replace(machine or Machine(), backends=(backend,)))
    if not sandbox.active:
        sandbox.close()
        pytest.skip(f"the {backend} sandbox cannot start here: {sandbox.status.reason}")
    return sandbox


def failing_bwrap(folder: Path, message: str = APPARMOR_REFUSAL) -> Path:
    """A ``bwrap`` that answers --version and fails anything else with ``message``."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "bwrap"
    program.write_text("#!/bin/sh\n"
                       'if [ "$1" = "--version" ]; then echo "bubblewrap 0.9.0"; exit 0; fi\n'
                       f"echo '{message}' >&2\nexit 1\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return program


def sysctl_tree(folder: Path, values: Mapping[str, str]) -> Path:
    """A /proc/sys stand-in: ``{"kernel/apparmor_restrict_unprivileged_userns": "1"}``."""
    for name, value in values.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return folder


def tool_context(workspace: Workspace, sandbox: Sandbox | None) -> ToolContext:
    return ToolContext(workspace=workspace, cancel=CancelToken(), state=ToolSessionState(), sandbox=sandbox)


async def bash(ctx: ToolContext, command: str, *, timeout: float = 60, unsandboxed: bool = False,
               description: str | None = None) -> ToolOutput:
    """The bash tool's own run (no permission check), as a call would run it."""
    args = BashInput(command=command, timeout=timeout, description=description,
                     dangerously_disable_sandbox=unsandboxed)
    return await BashTool().run(args, ctx)


def run_bash(ctx: ToolContext, command: str, **kw: object) -> ToolOutput:
    return asyncio.run(bash(ctx, command, **kw))  # type: ignore[arg-type]


def real_path(path: Path) -> Path:
    return Path(os.path.realpath(path))


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace folder and a folder beside it, outside (both with their real paths);
    re-exported by tests/conftest.py."""
    root = real_path(tmp_path) / "ws"
    root.mkdir()
    outside = real_path(tmp_path) / "outside"
    outside.mkdir()
    return root, outside
