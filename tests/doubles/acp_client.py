"""An ACP client for the tests: the SDK's own client side driving a real `loom acp`.

:class:`RecordingClient` answers permission questions from a script and keeps every
``session/update``; :func:`loom_acp` starts `loom acp` and connects to it; a
:class:`Transcript` keeps every JSON-RPC message of the connection, both ways.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.connection import StreamEvent
from acp.core import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

# How the client answers a question: an option id Loom offered, or "cancelled".
CANCEL = "cancelled"


@dataclass
class Question:
    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]


@dataclass
class RecordingClient:
    """``answers``: the reply to each permission question, in order."""

    answers: list[str] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        async with self._changed:
            self.updates.append((session_id, update))
            self._changed.notify_all()

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: list[PermissionOption], **kwargs: Any) -> RequestPermissionResponse:
        async with self._changed:
            self.questions.append(Question(session_id, tool_call, options))
            self._changed.notify_all()
        answer = self.answers.pop(0)
        if answer == CANCEL:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def wait_until(self, ready: Callable[[RecordingClient], bool], timeout: float = 30) -> None:
        """Until ``ready`` holds after an update or a question (the timeout only bounds a hang)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: ready(self)), timeout)

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [update.session_update for sid, update in self.updates if session_id in (None, sid)]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(update.content.text for sid, update in self.updates
                       if update.session_update == kind and session_id in (None, sid))

    def of_kind(self, kind: str) -> list[Any]:
        return [update for _, update in self.updates if update.session_update == kind]

    def forget(self) -> None:
        self.updates.clear()
        self.questions.clear()


@dataclass
class Transcript:
    """Every message of the connection, as JSON lines: ``{"from": "client"|"agent", ...}``."""

    lines: list[dict[str, Any]] = field(default_factory=list)

    def observe(self, event: StreamEvent) -> None:
        # The client's connection: outgoing messages are the client's, incoming the agent's.
        sender = "client" if event.direction.value == "outgoing" else "agent"
        import time
        self.lines.append({"from": sender, "message": event.message, "t": time.monotonic()})

    def save(self, path: Path) -> None:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))

    def methods(self, sender: str) -> list[str]:
        return [str(line["message"]["method"]) for line in self.lines
                if line["from"] == sender and "method" in line["message"]]


@asynccontextmanager
async def loom_acp(client: RecordingClient, cwd: Path, env: Mapping[str, str], *args: str,
                   transcript: Transcript | None = None
                   ) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`loom acp ARGS` started in ``cwd`` with ``env``, connected to ``client``."""
    observers = [transcript.observe] if transcript is not None else []
    # The SDK gives an agent 2 s to exit once its input closes, then kills it; on a loaded
    # machine Loom's orderly close (sessions, MCP servers) may take longer.
    async with spawn_agent_process(client, sys.executable, "-m", "loom_cli", "acp", *args, env=dict(env),
                                   cwd=cwd, observers=observers,
                                   transport_kwargs={"shutdown_timeout": 30}) as (conn, process):
        yield conn, process
