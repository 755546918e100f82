"""Telemetry for this process, when ``LOOM_ENABLE_TELEMETRY`` turns it on (docs/telemetry.md).

With it off this imports nothing of OpenTelemetry. With it on, the SDK's providers are
made once per process (the chat builds an agent again on /resume) and flushed by an
exit handler — which `exit_now` runs too, and which runs after Ctrl+C — so the spans of
a run cut short still leave.
"""

from __future__ import annotations

import atexit
import functools
import os
from typing import TYPE_CHECKING

from loom_engine.telemetry.settings import TelemetryConfigError, TelemetrySettings

if TYPE_CHECKING:
    from loom_engine.redact import Redactor
    from loom_engine.telemetry.observer import RunObserver
    from loom_engine.telemetry.setup import Telemetry


def telemetry_observer(session_id: str | None, redactor: Redactor, warnings: list[str]) -> RunObserver | None:
    """The observer for an agent of this session; None with telemetry off or unusable
    (why is added to ``warnings``: a bad variable must not stop the user's work)."""
    settings = TelemetrySettings.from_env(os.environ)
    if not settings.enabled:
        return None
    telemetry = _process_telemetry(settings)
    if isinstance(telemetry, str):
        warnings.append(f"telemetry off: {telemetry}")
        return None
    return telemetry.recorder(session_id=session_id, redactor=redactor)


@functools.cache
def _process_telemetry(settings: TelemetrySettings) -> Telemetry | str:
    from loom_engine.telemetry.setup import start_telemetry

    from .version import __version__

    try:
        telemetry = start_telemetry(settings, os.environ, version=__version__)
    except TelemetryConfigError as error:
        return str(error)
    atexit.register(telemetry.shutdown)
    return telemetry
