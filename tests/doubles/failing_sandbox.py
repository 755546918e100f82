"""A machine whose sandbox cannot start, for a test in this process: the engine's
:class:`~loom_engine.sandbox.Machine` pointed at a ``bwrap`` that fails the way bubblewrap
does where user namespaces are refused, and at kernel settings that say they are off."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom_engine.sandbox import Machine

REFUSAL = "bwrap: Creating new namespace failed: Operation not permitted"


def failing_machine(folder: Path) -> Machine:
    """A Machine (its files in ``folder``) on which bubblewrap cannot make namespaces."""
    folder.mkdir(parents=True, exist_ok=True)
    bwrap = folder / "bwrap"
    bwrap.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.8.0" && exit 0\n'
                     f'echo "{REFUSAL}" >&2\nexit 1\n')
    bwrap.chmod(0o755)
    sysctl = folder / "sys"
    (sysctl / "user").mkdir(parents=True, exist_ok=True)
    (sysctl / "user" / "max_user_namespaces").write_text("0\n")
    return Machine(backends=("bubblewrap",), bwrap=bwrap, sysctl_root=sysctl)


def opening_on(machine: Machine) -> Callable[..., Any]:
    """loom_cli's ``open_session_sandbox``, on ``machine`` (to patch into bootstrap)."""
    from loom_cli.sandbox_setup import open_session_sandbox

    return functools.partial(open_session_sandbox, machine=machine)
