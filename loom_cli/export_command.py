"""`loom export SESSION --format atif [-o FILE]`: a session as a trajectory file.

SESSION is a session id (as `loom sessions` lists it), a prefix of one that names a
single session, or ``last`` (the newest session of this workspace). The trajectory goes
to standard output, or to FILE. Bad input is one line and exit 2.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from loom_engine.paths import sessions_dir
from loom_engine.providers.endpoints import API_KEY_VARIABLES
from loom_engine.redact import Redactor
from loom_engine.sessions.store import SessionError, SessionInfo, SessionStore
from loom_engine.workspace import find_workspace_root

from .version import __version__

FORMATS = ("atif",)
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


class ExportError(Exception):
    """What stops the export, in one line; ``code`` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ExportRequest:
    session: str
    format: str
    cwd: Path
    output: Path | None = None


def run_export(request: ExportRequest) -> str:
    """The exported text (for standard output when no file was asked for); with an
    output file, it is written there and the text is returned all the same."""
    if request.format not in FORMATS:
        raise ExportError(f"unknown export format {request.format!r} (known: {', '.join(FORMATS)})")
    store = SessionStore(sessions_dir())
    info = _session(store, request.session, find_workspace_root(request.cwd))
    from loom_engine.sessions.atif import session_trajectory

    # The keys this Loom holds, besides every known shape (the session file was
    # redacted when written; a key added since, or redaction turned off, is caught here).
    redactor = Redactor.for_values(os.environ.get(name) for name in API_KEY_VARIABLES.values())
    try:
        trajectory = session_trajectory(info.path, agent_version=__version__, redactor=redactor)
    except SessionError as error:
        raise ExportError(f"cannot export session {info.id}: {error}", EXIT_ERROR) from None
    text = json.dumps(trajectory, indent=2, ensure_ascii=False) + "\n"
    if request.output is not None:
        try:
            request.output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ExportError(f"cannot write {request.output}: {error.strerror}", EXIT_ERROR) from None
    return text


def _session(store: SessionStore, wanted: str, workspace: Path) -> SessionInfo:
    if wanted == "last":
        newest = store.newest(workspace)
        if newest is None:
            raise ExportError(f"no session in {workspace} (loom sessions --all lists every workspace's)")
        return newest
    try:
        path = store.path_for(wanted)
    except SessionError as error:
        raise ExportError(str(error)) from None
    infos, _ = store.list()
    exact = [i for i in infos if i.id == wanted or i.path == path]
    matches = exact or [i for i in infos if i.id.startswith(wanted)]
    if not matches:
        raise ExportError(f"no session {wanted!r} (loom sessions --all lists them)")
    if len(matches) > 1:
        shown = ", ".join(i.id for i in matches[:3]) + (", ..." if len(matches) > 3 else "")
        raise ExportError(f"session prefix {wanted!r} names {len(matches)} sessions ({shown}); give more of the id")
    return matches[0]
