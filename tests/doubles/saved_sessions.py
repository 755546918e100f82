"""Session files written the way Loom writes them (through the session store), for the
search index's tests, and the benchmark's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loom_engine.messages import Message, TextPart, ToolResultPart, ToolUsePart
from loom_engine.redact import Redactor
from loom_engine.sessions.store import SHAPES_ONLY, SessionStore, SessionWriter
from loom_engine.turn_state import TurnState


@dataclass(frozen=True)
class Exchange:
    """One prompt, the tools the model called for it, and its answer."""

    prompt: str
    answer: str = "done"
    tools: Sequence[tuple[str, dict[str, Any]]] = field(default_factory=tuple)


def write_exchange(writer: SessionWriter, exchange: Exchange, number: int = 0) -> None:
    writer.append_message(Message.user(exchange.prompt, prompt=exchange.prompt))
    for index, (name, arguments) in enumerate(exchange.tools):
        call = f"call-{number}-{index}"
        writer.append_message(Message.assistant(ToolUsePart(call, name, arguments)))
        writer.append_message(Message.tool_results([ToolResultPart(call, "ok")]))
    writer.append_message(Message.assistant(TextPart(exchange.answer)))
    writer.append_turn_state(TurnState.initial().next_turn(), run_end="end_turn")


def save_session(sessions: Path, workspace: Path | str, exchanges: Sequence[Exchange], *,
                 redactor: Redactor | None = SHAPES_ONLY, keep_open: bool = False) -> SessionWriter:
    """A session of ``workspace`` with ``exchanges``; closed unless ``keep_open``."""
    writer = SessionStore(sessions).create(Path(workspace), provider="anthropic", model="m", redactor=redactor)
    for number, exchange in enumerate(exchanges):
        write_exchange(writer, exchange, number)
    if not keep_open:
        writer.close()
    return writer
