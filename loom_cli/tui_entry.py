"""Opens the TUI; kept apart so `loom run` never imports Textual."""

from __future__ import annotations

from pathlib import Path


def open_tui(*, continue_session: bool, resume_id: str | None, model: str | None, provider: str | None,
             permission_mode: str | None, fork_session: bool = False) -> int:
    from .tui.app import TuiOptions, run_tui

    return run_tui(TuiOptions(workspace=Path.cwd(), continue_session=continue_session, resume_id=resume_id,
                              fork_session=fork_session,
                              model=model, provider=provider, permission_mode=permission_mode))
