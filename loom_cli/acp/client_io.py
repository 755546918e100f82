"""Which file and command backends an ACP session uses, from what its client offers.

    io = client_io(initialize_request.client_capabilities, connection, session_id,
                   on_terminal=show_terminal_in_tool_call)
    parts = replace(parts, files=io.files, commands=io.commands)

Files go through the editor only when it offers both reading and writing: reading its
unsaved buffer but writing the disk (or the reverse) would let one overwrite the other.
Whatever is not offered stays Loom's own (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .client_files import ClientFileAccess, EditorFiles
from .client_terminal import ClientTerminalRunner, EditorTerminals, TerminalStarted
from .sdk import ClientCapabilities


class EditorConnection(EditorFiles, EditorTerminals, Protocol):
    """The agent-side connection to the client (the SDK's ``AgentSideConnection``)."""


@dataclass(frozen=True)
class ClientIO:
    files: ClientFileAccess | None
    commands: ClientTerminalRunner | None


def client_io(capabilities: ClientCapabilities | None, client: EditorConnection, session_id: str, *,
              on_terminal: TerminalStarted | None = None) -> ClientIO:
    fs = capabilities.fs if capabilities is not None else None
    files = (ClientFileAccess(client, session_id)
             if fs is not None and fs.read_text_file and fs.write_text_file else None)
    commands = (ClientTerminalRunner(client, session_id, on_terminal=on_terminal)
                if capabilities is not None and capabilities.terminal else None)
    return ClientIO(files, commands)
