"""Opening the chat from the command line: `loom` with no subcommand."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from loom_engine.permissions.modes import PermissionMode
from loom_engine.sandbox.config import SandboxMode

from .options import TuiOptions


def open_tui(*, continue_session: bool, resume_id: str | None, model: str | None, provider: str | None,
             permission_mode: PermissionMode | None, fork_session: bool = False,
             sandbox: SandboxMode | None = None) -> NoReturn:
    """Open the chat in the current folder, and end the process with its exit code once
    the terminal is restored (see loom_cli.exit: no teardown of every imported module)."""
    from loom_cli.exit import exit_now

    from .app import run_tui  # Textual loads here, never for `loom run`

    code = run_tui(TuiOptions(workspace=Path.cwd(), continue_session=continue_session, resume_id=resume_id,
                              fork_session=fork_session, model=model, provider=provider,
                              permission_mode=permission_mode, sandbox=sandbox))
    exit_now(code)
