"""The one door to the ACP SDK (``agent-client-protocol`` 0.12, imported as ``acp``).

The SDK lags the protocol's schema and renames things between minor versions, so the
rest of the package imports what it needs from here and nowhere else: a new SDK means
one module to check.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO, TypeVar

from acp import (
    PROTOCOL_VERSION,
    CreateTerminalResponse,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestError,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
    run_agent,
    stdio_streams,
)
from acp.interfaces import Client
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AudioContentBlock,
    AvailableCommand,
    AvailableCommandsUpdate,
    ClientCapabilities,
    ContentToolCallContent,
    Cost,
    CurrentModeUpdate,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    EnvVariable,
    FileEditToolCallContent,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PlanEntry,
    PlanEntryStatus,
    PromptCapabilities,
    PromptResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    StopReason,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    Usage,
    UsageUpdate,
    UserMessageChunk,
)
from pydantic import BaseModel

# What a ``session/update`` may carry, of the kinds Loom sends.
SessionUpdate = (UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress
                 | AgentPlanUpdate | AvailableCommandsUpdate | CurrentModeUpdate | UsageUpdate)
# What a prompt may hold, as the SDK types it.
PromptBlock = (TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock
               | EmbeddedResourceContentBlock)
# What a tool call shows.
ToolCallContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


_Model = TypeVar("_Model", bound=BaseModel)
# The longest JSON-RPC line read (a prompt with a big embedded file is one line).
_LINE_LIMIT = 50 * 1024 * 1024


def invalid_params(message: str) -> RequestError:
    """A request Loom cannot take, with the one line that says why (shown by editors)."""
    return RequestError(-32602, message)


def internal_error(message: str, **data: object) -> RequestError:
    """A request that failed in Loom (the run's error, said as `loom run` says it)."""
    return RequestError(-32603, message, dict(data) or None)


def text_block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def text_content(text: str) -> ContentToolCallContent:
    """Text shown inside a tool call (a command's output, a result)."""
    return ContentToolCallContent(type="content", content=text_block(text))


def terminal_content(terminal_id: str) -> TerminalToolCallContent:
    """An editor terminal a command runs in, shown live inside its tool call."""
    return TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


def diff_content(path: str, old_text: str | None, new_text: str) -> FileEditToolCallContent:
    return FileEditToolCallContent(type="diff", path=path, old_text=old_text, new_text=new_text)


def agent_text(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=text_block(text))


def agent_thought(text: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(session_update="agent_thought_chunk", content=text_block(text))


def user_text(text: str) -> UserMessageChunk:
    return UserMessageChunk(session_update="user_message_chunk", content=text_block(text))


def current_mode(mode_id: str) -> CurrentModeUpdate:
    return CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id)


def redacted(model: _Model, redact: Callable[[object], object]) -> _Model:
    """``model`` with every string passed through ``redact`` (a ``Redactor.redact_tree``):
    the one choke point before an update or a question reaches the client."""
    return type(model).model_validate(redact(model.model_dump(mode="json", by_alias=True, exclude_none=True)))


__all__ = [
    "PROTOCOL_VERSION",
    "AcpMcpServer",
    "AgentCapabilities",
    "AgentPlanUpdate",
    "AllowedOutcome",
    "AudioContentBlock",
    "AvailableCommand",
    "AvailableCommandsUpdate",
    "Client",
    "ClientCapabilities",
    "ContentToolCallContent",
    "Cost",
    "CreateTerminalResponse",
    "DeniedOutcome",
    "EmbeddedResourceContentBlock",
    "EnvVariable",
    "FileEditToolCallContent",
    "HttpMcpServer",
    "ImageContentBlock",
    "Implementation",
    "InitializeResponse",
    "KillTerminalResponse",
    "ListSessionsResponse",
    "LoadSessionResponse",
    "McpCapabilities",
    "McpServer",
    "McpServerStdio",
    "NewSessionResponse",
    "PermissionOption",
    "PlanEntry",
    "PlanEntryStatus",
    "PromptBlock",
    "PromptCapabilities",
    "PromptResponse",
    "ReadTextFileResponse",
    "ReleaseTerminalResponse",
    "RequestError",
    "RequestPermissionResponse",
    "ResourceContentBlock",
    "SessionCapabilities",
    "SessionConfigOptionSelect",
    "SessionConfigSelectOption",
    "SessionInfo",
    "SessionListCapabilities",
    "SessionMode",
    "SessionModeState",
    "SessionUpdate",
    "SetSessionConfigOptionResponse",
    "SetSessionModeResponse",
    "SseMcpServer",
    "StopReason",
    "TerminalOutputResponse",
    "TerminalToolCallContent",
    "TextContentBlock",
    "TextResourceContents",
    "ToolCallContent",
    "ToolCallLocation",
    "ToolCallProgress",
    "ToolCallStart",
    "ToolCallStatus",
    "ToolCallUpdate",
    "ToolKind",
    "Usage",
    "UsageUpdate",
    "UserMessageChunk",
    "WaitForTerminalExitResponse",
    "WriteTextFileResponse",
    "agent_text",
    "agent_thought",
    "current_mode",
    "diff_content",
    "internal_error",
    "invalid_params",
    "redacted",
    "run_agent",
    "serve_stdio",
    "terminal_content",
    "text_block",
    "text_content",
    "user_text",
]



async def serve_stdio(agent: object, protocol_out: TextIO) -> None:
    """Serve ``agent`` (the SDK's Agent protocol, by method name) over standard input and
    ``protocol_out`` (standard output's own descriptor, kept apart from ``sys.stdout``)
    until the client closes its end."""
    # The SDK's streams write to whatever ``sys.stdout`` is when they are made: the
    # protocol's descriptor, for that moment only (nothing else runs in between).
    kept, sys.stdout = sys.stdout, protocol_out
    try:
        reader, writer = await stdio_streams(limit=_LINE_LIMIT)
    finally:
        sys.stdout = kept
    await run_agent(agent, input_stream=writer, output_stream=reader)  # type: ignore[arg-type]
