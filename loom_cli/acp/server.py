"""The ACP agent: answers the protocol's methods with Loom's sessions and engine.

One :class:`LoomAcpAgent` serves one client (one stdio connection) and any number of its
sessions; each session is a Loom agent built as `loom run` builds one.
"""

from __future__ import annotations

import asyncio
import datetime
import sys
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.events import (
    TERMINAL_EVENTS,
    AgentEvent,
    BudgetExceeded,
    Error,
    Finished,
    HookRan,
    Notice,
    PermissionRequested,
)
from loom_engine.permissions.answer import PermissionAnswer

from ..turns import start_turn
from ..version import __version__
from .asks import permission_options, question_tool_call, read_reply
from .client_io import client_io
from .commands import ChatOnlyCommand, commands_update, invocation_of
from .modes import MODEL_OPTION, mode_state, model_option, offered_modes
from .prompt_content import UnsupportedContent, loom_prompt
from .replay import history_updates
from .sdk import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    Client,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServer,
    NewSessionResponse,
    PromptBlock,
    PromptCapabilities,
    PromptResponse,
    RequestError,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionInfo,
    SessionListCapabilities,
    SessionModeState,
    SessionUpdate,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallProgress,
    agent_text,
    internal_error,
    invalid_params,
    redacted,
    terminal_content,
)
from .sessions import AcpSession, build_session, untrusted_notice
from .updates import EventAdapter, prompt_usage, stop_reason_for

if TYPE_CHECKING:
    from loom_engine.agent import Agent
    from loom_engine.attachments import Attachment, UserPrompt

    from ..bootstrap import RunOptions

# Why a run stopped when the editor cancelled it (session/cancel, or a cancelled question).
CANCELLED_BY_CLIENT = "cancelled by the editor"


class LoomAcpAgent:
    """The methods ``acp`` routes to (the SDK's ``Agent`` protocol, by name)."""

    def __init__(self, template: RunOptions) -> None:
        self._template = template
        self._client: Client | None = None
        self._client_capabilities = ClientCapabilities()
        self._sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    # --- setup ------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        if client_capabilities is not None:
            self._client_capabilities = client_capabilities
        # Stated as they are: no images or audio in a prompt (Loom's prompt is text and
        # attached files); embedded text resources are attached as files.
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=True),
            session_capabilities=SessionCapabilities(list=SessionListCapabilities()))
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=capabilities,
                                  agent_info=Implementation(name="loom", title="Loom", version=__version__),
                                  auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # Loom reads its keys from the environment and settings: no auth methods

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: Sequence[McpServer] | None = None, **kwargs: Any) -> NewSessionResponse:
        session = await self._open(cwd, mcp_servers or (), resume_id=None)
        self._offer_commands(session)
        return NewSessionResponse(session_id=session.id, modes=self._modes(session),
                                  config_options=[self._model(session)])

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Sequence[McpServer] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        session = self._sessions.get(session_id)
        if session is None:
            session = await self._open(cwd, mcp_servers or (), resume_id=session_id)
        for update in history_updates(session.agent.messages, session.built.workspace.root):
            await self._send(session, update)
        self._offer_commands(session)
        return LoadSessionResponse(modes=self._modes(session), config_options=[self._model(session)])

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        from loom_engine.paths import sessions_dir
        from loom_engine.sessions.store import SessionStore
        from loom_engine.workspace import find_workspace_root

        root = find_workspace_root(Path(cwd)) if cwd else None
        infos, _ = await asyncio.to_thread(SessionStore(sessions_dir()).list, root)
        return ListSessionsResponse(sessions=[
            SessionInfo(session_id=info.id, cwd=info.workspace, title=_title(info.first_prompt),
                        updated_at=datetime.datetime.fromtimestamp(info.updated, datetime.UTC).isoformat())
            for info in infos])

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        permissions = session.agent.permissions
        offered = offered_modes(session.bypass_allowed)
        if permissions is None or mode_id not in offered:
            raise invalid_params(f"unknown mode {mode_id!r}; one of: {', '.join(offered)}")
        permissions.mode = next(mode for mode in offered if mode == mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id != MODEL_OPTION or not isinstance(value, str) or not value.strip():
            raise invalid_params(f"Loom has one option, {MODEL_OPTION!r}, a model name")
        if session.agent.is_running:
            raise invalid_params("wait for the prompt to end before switching the model")
        session.agent.choose_model(value.strip())  # saved with the session, as the chat's /model
        return SetSessionConfigOptionResponse(config_options=[self._model(session)])

    # --- prompts ----------------------------------------------------------------------

    async def prompt(self, prompt: Sequence[PromptBlock], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.busy:
            raise invalid_params("a prompt is already running in this session")
        session.busy, session.cancelled_early = True, False
        try:
            return await self._answer(session, prompt)
        finally:
            session.busy = False

    async def _answer(self, session: AcpSession, prompt: Sequence[PromptBlock]) -> PromptResponse:
        agent = session.agent
        root = session.built.workspace.root
        try:
            content = loom_prompt(prompt, root)
            invocation = invocation_of(agent, content.text) if not content.attachments else None
        except (UnsupportedContent, ChatOnlyCommand) as error:
            raise invalid_params(str(error)) from None
        if session.notice is not None:  # the project's additions left out: said in the first reply
            await self._send(session, agent_text(session.notice + "\n\n"))
            session.notice = None
        # A custom command or skill runs as in `loom run`; any other prompt with its files.
        run = start_turn(agent, content.text, invocation) if invocation is not None else \
            agent.run(await _with_attachments(agent, content.text, content.attachments))
        if session.cancelled_early:  # cancelled while its files were read: nothing was sent
            await run.aclose()
            return PromptResponse(stop_reason="cancelled")
        adapter = EventAdapter(root)
        final: AgentEvent | None = None
        async with aclosing(run) as events:
            async for event in events:
                if isinstance(event, PermissionRequested):
                    self._ask(session, event)
                    continue
                for update in adapter.updates(event):
                    await self._send(session, update)
                _log(event)
                if event.depth == 0 and isinstance(event, TERMINAL_EVENTS):
                    final = event
        for task in list(session.asks):  # a question still open when the run ended is moot
            task.cancel()
        return await self._ended(session, final)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Esc's semantics: the run stops at once, its transcript stays valid, and the
        prompt answers ``cancelled``."""
        session = self._sessions.get(session_id)
        if session is None or not session.busy:
            return
        if session.agent.is_running:
            session.agent.abort(CANCELLED_BY_CLIENT)
        else:
            session.cancelled_early = True

    # --- the end ------------------------------------------------------------------------

    async def close(self) -> None:
        """The client went away: stop what runs and close every session as `loom run` does."""
        from ..turns import session_hook_failures

        for session in list(self._sessions.values()):
            agent = session.agent
            if agent.is_running:
                agent.abort(CANCELLED_BY_CLIENT)
            for event in await session_hook_failures(agent, "session_ended", "other"):
                _log(event)
            if session.built.mcp is not None:
                await session.built.mcp.aclose()
            await agent.aclose()
            session.built.session.close()
        self._sessions.clear()

    # --- helpers ------------------------------------------------------------------------

    async def _open(self, cwd: str, servers: Sequence[McpServer], *, resume_id: str | None) -> AcpSession:
        from loom_engine.providers.base import ProviderError

        from ..bootstrap import UsageError
        from ..mcp_setup import headless_wait_s
        from ..settings import ConfigError
        from ..turns import session_hook_failures

        folder = Path(cwd)
        if not folder.is_absolute() or not folder.is_dir():
            raise invalid_params(f"{cwd}: not an absolute path to a folder")
        try:
            built, refused = await asyncio.to_thread(build_session, self._template, folder, servers,
                                                     resume_id=resume_id)
        except (UsageError, ConfigError, ProviderError) as error:
            raise invalid_params(str(error)) from None
        for line in (*built.warnings, *refused):
            sys.stderr.write(f"loom: warning: {line}\n")
        session = AcpSession(built, self._client_capabilities, notice=untrusted_notice(built),
                             bypass_allowed=self._template.permission_mode == "bypass")
        self._sessions[session.id] = session
        self._use_client_io(session)
        manager = built.mcp
        if manager is not None:
            manager.start()
            wait_s = headless_wait_s()
            await manager.wait_ready(manager.connect_timeout_s if wait_s is None else wait_s)
        for event in await session_hook_failures(session.agent, "session_started",
                                                 "resume" if built.resumed else "startup"):
            _log(event)
        return session

    def _use_client_io(self, session: AcpSession) -> None:
        """Files and commands through the editor where it offers them (its unsaved buffers,
        its terminal); Loom's own for the rest. Checks, snapshots and the sandbox stay Loom's."""
        if self._client is None:
            return

        async def show_terminal(call_id: str, terminal_id: str) -> None:
            await self._send(session, ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                                       content=[terminal_content(terminal_id)]))

        chosen = client_io(session.client_capabilities, self._client, session.id, on_terminal=show_terminal)
        agent = session.agent
        agent.parts = replace(agent.parts, files=chosen.files, commands=chosen.commands)

    def _offer_commands(self, session: AcpSession) -> None:
        """The session's commands, sent once its id is the client's (after this response)."""
        session.offer = asyncio.create_task(self._send(session, commands_update(session.agent)))

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise invalid_params(f"no open session {session_id!r} (session/new or session/load it first)")
        return session

    def _modes(self, session: AcpSession) -> SessionModeState | None:
        permissions = session.agent.permissions
        return mode_state(permissions.mode, session.bypass_allowed) if permissions is not None else None

    def _model(self, session: AcpSession) -> SessionConfigOptionSelect:
        config = session.agent.config
        return model_option(config.provider, session.agent.client.model)

    async def _send(self, session: AcpSession, update: SessionUpdate) -> None:
        if self._client is not None:
            await self._client.session_update(session_id=session.id,
                                              update=redacted(update, _cleaner(session.agent)))

    def _ask(self, session: AcpSession, request: PermissionRequested) -> None:
        """The question goes to the client while the run's other events go on."""
        task = asyncio.create_task(self._question(session, request))
        session.asks.add(task)
        task.add_done_callback(session.asks.discard)

    async def _question(self, session: AcpSession, request: PermissionRequested) -> None:
        agent = session.agent
        if self._client is None:
            agent.abort(CANCELLED_BY_CLIENT)
            return
        call = redacted(question_tool_call(request, session.built.workspace.root), _cleaner(agent))
        try:
            response = await self._client.request_permission(session_id=session.id, tool_call=call,
                                                             options=permission_options(request))
        except (RequestError, ConnectionError) as error:  # the client failed the question: no answer
            sys.stderr.write(f"loom: the permission question failed: {error}\n")
            response = None
        reply = read_reply(response) if response is not None else None
        if reply is None or reply.kind == "cancelled":
            agent.abort(CANCELLED_BY_CLIENT)
        elif reply.kind == "reject":
            # The chat's "n": the call is refused (the model is told), and the turn stops.
            agent.refuse_and_stop(request.request_id, request.call_id)
        else:
            agent.answer_permission(request.request_id, PermissionAnswer(reply.decision))

    async def _ended(self, session: AcpSession, final: AgentEvent | None) -> PromptResponse:
        from ..stop_reason import stop_reason

        reason = stop_reason_for(final)
        if reason is None:  # an error: the request fails with what `loom run` would say
            if not isinstance(final, Error):
                raise internal_error("the run ended without a result")
            raise internal_error(_cleaner(session.agent)(stop_reason(final, headless=True)), kind=final.kind)
        if isinstance(final, BudgetExceeded):  # no ACP reason says it: the answer does
            await self._send(session, agent_text(f"\n\n{stop_reason(final, headless=True)}"))
        usage = prompt_usage(final.usage) if isinstance(final, Finished) else None
        return PromptResponse(stop_reason=reason, usage=usage)


async def _with_attachments(agent: Agent, text: str, extra: Sequence[Attachment]) -> str | UserPrompt:
    """The prompt with its ``@path`` mentions attached (Loom's read tool, under the rules)
    and the editor's embedded context after them."""
    from loom_engine.attachments import UserPrompt

    from ..turns import attach_mentions

    prompt = await attach_mentions(agent, text)
    if not extra:
        return prompt
    if isinstance(prompt, UserPrompt):
        return UserPrompt(prompt.text, (*prompt.attachments, *extra))
    return UserPrompt(prompt, tuple(extra))


def _cleaner(agent: Agent) -> Callable[[Any], Any]:
    """What everything sent to the client goes through: the agent's redactor, as for the
    session file and `loom run`'s output."""
    config = agent.config
    return config.redactor.redact_tree if config.redact_secrets else (lambda value: value)


def _log(event: AgentEvent) -> None:
    """What `loom run` says on stderr (an editor keeps the agent's stderr as its log)."""
    if isinstance(event, Notice) and event.level == "warning":
        sys.stderr.write(f"loom: {event.message}\n")
    elif isinstance(event, HookRan) and event.outcome in ("error", "timeout") and event.message:
        sys.stderr.write(f"loom: {event.event} hook `{event.command}`: {event.message}\n")


def _title(first_prompt: str) -> str | None:
    line = " ".join(first_prompt.split())
    return (line if len(line) <= 80 else line[:79] + "…") or None
