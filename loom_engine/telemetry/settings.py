"""Whether telemetry is on, and what it may include: read from the environment, no SDK import.

Claude Code's contract, in Loom's words: ``LOOM_ENABLE_TELEMETRY=1`` turns it on, the
standard ``OTEL_*`` variables say where it goes (read by :mod:`.setup` and by the SDK's
own exporters), and content stays out unless asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_TRUE = ("1", "true", "yes", "on")


class TelemetryConfigError(ValueError):
    """A telemetry variable has a value Loom cannot use; the message names it."""


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() in _TRUE


@dataclass(frozen=True)
class TelemetrySettings:
    enabled: bool = False
    # The text of the user's prompts in the prompt events (redacted); off: only its length.
    log_user_prompts: bool = False
    # Tool arguments and results in the tool events and spans (redacted); off: name and outcome only.
    log_tool_details: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TelemetrySettings:
        return cls(enabled=_flag(environ, "LOOM_ENABLE_TELEMETRY"),
                   log_user_prompts=_flag(environ, "OTEL_LOG_USER_PROMPTS"),
                   log_tool_details=_flag(environ, "OTEL_LOG_TOOL_DETAILS"))


SIGNALS = ("traces", "metrics", "logs")
EXPORTERS = {"traces": ("otlp", "console", "none"), "metrics": ("otlp", "prometheus", "console", "none"),
             "logs": ("otlp", "console", "none")}
PROTOCOLS = ("grpc", "http/protobuf")


def exporters_for(environ: Mapping[str, str], signal: str) -> tuple[str, ...]:
    """The exporters ``OTEL_{SIGNAL}_EXPORTER`` names (comma-separated); none when unset,
    as in Claude Code: a signal is sent only where it is told to go."""
    variable = f"OTEL_{signal.upper()}_EXPORTER"
    names = tuple(n.strip().lower() for n in environ.get(variable, "").split(",") if n.strip())
    for name in names:
        if name not in EXPORTERS[signal]:
            raise TelemetryConfigError(f"{variable}: unknown exporter {name!r} (use {', '.join(EXPORTERS[signal])})")
    return tuple(n for n in names if n != "none")


def protocol_for(environ: Mapping[str, str], signal: str) -> str:
    """``OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL``, else ``OTEL_EXPORTER_OTLP_PROTOCOL``, else http/protobuf."""
    for variable in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = environ.get(variable, "").strip().lower()
        if value:
            if value not in PROTOCOLS:
                raise TelemetryConfigError(f"{variable}: unsupported protocol {value!r} (use {', '.join(PROTOCOLS)})")
            return value
    return "http/protobuf"


def milliseconds(environ: Mapping[str, str], variable: str) -> int | None:
    """A positive whole number of milliseconds from ``variable``; None when unset."""
    value = environ.get(variable, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) <= 0:
        raise TelemetryConfigError(f"{variable}: expected a positive number of milliseconds, got {value!r}")
    return int(value)
