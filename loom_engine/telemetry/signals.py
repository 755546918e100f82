"""Loom's metrics (``loom.*``) and events (log records), named after Claude Code's.

Content leaves only when asked for: a prompt's text with ``OTEL_LOG_USER_PROMPTS=1``,
tool arguments and results with ``OTEL_LOG_TOOL_DETAILS=1``, and even then through the
session's redactor (keys, tokens, passwords). Imported only when telemetry is on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..usage import Usage

if TYPE_CHECKING:
    from ..redact import Redactor
    from .setup import Telemetry

# The instrumentation scope of Loom's spans, metrics and events.
SCOPE = "loom"
# What a detail attribute may hold: a collector is not an archive of whole files.
MAX_DETAIL_CHARS = 4096
TOKEN_TYPES = (("input", "input_tokens"), ("output", "output_tokens"),
               ("cacheRead", "cache_read_input_tokens"), ("cacheCreation", "cache_creation_input_tokens"))

AttributeValue = str | bool | int | float | list[str]


class Signals:
    """The instruments and the event logger of one recorder."""

    def __init__(self, telemetry: Telemetry, *, session_id: str | None, redactor: Redactor) -> None:
        self.settings = telemetry.settings
        self._redactor = redactor
        self._common: dict[str, AttributeValue] = {"session.id": session_id} if session_id else {}
        meter = telemetry.meter_provider.get_meter(SCOPE, telemetry.version)
        self.sessions = meter.create_counter("loom.session.count", unit="{session}",
                                             description="Sessions started")
        self.tokens = meter.create_counter("loom.token.usage", unit="{token}",
                                           description="Tokens used, by type and model")
        self.cost = meter.create_counter("loom.cost.usage", unit="USD", description="Estimated cost, by model")
        self.lines = meter.create_counter("loom.lines_of_code.count", unit="{line}",
                                          description="Lines added and removed by edits")
        self.decisions = meter.create_counter("loom.tool.decision", unit="{decision}",
                                              description="Permission decisions on tool calls")
        self.active = meter.create_counter("loom.active_time.total", unit="s",
                                           description="Time working (cli) and waiting for the user's answer (user)")
        self._logger = telemetry.logger_provider.get_logger(SCOPE, telemetry.version)

    def attributes(self, **extra: AttributeValue | None) -> dict[str, AttributeValue]:
        return {**self._common, **{k: v for k, v in extra.items() if v is not None}}

    def count_usage(self, usage: Usage, cost_usd: float, model: str) -> None:
        for kind, name in TOKEN_TYPES:
            amount = getattr(usage, name)
            if amount:
                self.tokens.add(amount, self.attributes(type=kind, model=model))
        if cost_usd:
            self.cost.add(cost_usd, self.attributes(model=model))

    def count_diff(self, display: Mapping[str, Any] | None, tool: str) -> None:
        """Lines a diff display adds and removes (file headers are not lines of code)."""
        if not display or display.get("kind") != "diff" or not isinstance(display.get("diff"), str):
            return
        lines = display["diff"].splitlines()
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        for kind, amount in (("added", added), ("removed", removed)):
            if amount:
                self.lines.add(amount, self.attributes(type=kind, tool_name=tool))

    def prompt_text(self, prompt: str) -> str | None:
        return self._redactor.redact(prompt) if self.settings.log_user_prompts else None

    def detail(self, value: object) -> str | None:
        """A tool's arguments or result for an attribute, when tool details are on (redacted, capped)."""
        if not self.settings.log_tool_details:
            return None
        text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        return self._redactor.redact(text)[:MAX_DETAIL_CHARS]

    def event(self, name: str, **fields: AttributeValue | None) -> None:
        """One event (a log record named ``name``), with the session's attributes."""
        attributes = self.attributes(**fields)
        attributes["event.name"] = name
        attributes["event.timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._logger.emit(body=name, attributes=attributes, event_name=name)
