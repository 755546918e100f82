"""The seam between a run and whatever watches it (OpenTelemetry, when turned on).

A run hands every event it emits to its observer at the moment it emits it — before
the event is queued for the consumer — so a span for a tool call is open before the
tool starts, and a command can be given that span's ``TRACEPARENT``. The few facts the
event stream does not carry (a model request starting, the stop reason of its answer,
the prompt typed) come through the methods below. Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..events import AgentEvent


class RunObserver(Protocol):
    """Watches the runs of an agent and of its sub-agents (one observer for the tree)."""

    def observe(self, event: AgentEvent) -> None:
        """An event of the agent that emits it (a sub-agent's too, once, from its own run)."""

    def prompt_submitted(self, stamp: Mapping[str, Any], prompt: str) -> None:
        """The user's prompt was added to the conversation (top-level agents only)."""

    def request_started(self, stamp: Mapping[str, Any], *, model: str, provider: str) -> None:
        """A model request is about to be sent (its retries belong to it)."""

    def request_finished(self, stamp: Mapping[str, Any], *, stop_reason: str) -> None:
        """The request's answer is complete; its usage came as a ``UsageUpdated`` just before."""

    def command_env(self, call_id: str) -> Mapping[str, str]:
        """Variables a command started by call ``call_id`` gets (``TRACEPARENT`` of its span)."""
