"""What an agent's hook scripts are told about its session, read afresh as each hook fires.

The payloads name the session, the permission mode in Claude Code's words and a
transcript in Claude Code's format, which is brought up to the conversation before the
hook runs; a sub-agent's name the user's session (its parent's), in the sub-agent's own
mode, as in Claude Code. Separate from the agent so the facade only wires its parts: the
view reads the agent through :class:`HookedAgent` and keeps the transcript mirror.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..permissions.modes import CLAUDE_MODE_NAMES
from .claude_transcript import ClaudeTranscript, claude_transcript_file
from .engine import HookSession, session_facts

if TYPE_CHECKING:
    from ..config import AgentConfig
    from ..messages import Message
    from ..permissions.manager import PermissionManager
    from ..transcript import SessionLog
    from ..workspace import Workspace


class HookedAgent(Protocol):
    """The agent as its hooks' payloads read it; any of it may change between two hooks
    (a new session after /clear, another mode, another model)."""

    @property
    def config(self) -> AgentConfig: ...

    @property
    def permissions(self) -> PermissionManager | None: ...

    @property
    def session(self) -> SessionLog | None: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def messages(self) -> tuple[Message, ...]: ...


class HookSessionView:
    """The session an agent's hook engine puts in each payload (:meth:`current`)."""

    def __init__(self, agent: HookedAgent) -> None:
        self._agent = agent
        # The conversation in Claude Code's format for hook scripts (made at the first hook).
        self._claude_transcript: ClaudeTranscript | None = None
        # Set in a sub-agent: its hooks name the user's session and transcript, as in Claude Code.
        self.parent: Callable[[], HookSession] | None = None

    def current(self) -> HookSession:
        """Read as each hook fires: the Claude Code-format transcript is brought up to
        the conversation as it is then."""
        agent = self._agent
        mode = agent.permissions.mode if agent.permissions is not None else "bypass"
        if self.parent is not None:  # a sub-agent: the session it works for, in its own mode
            return replace(self.parent(), permission_mode=CLAUDE_MODE_NAMES[mode])
        facts = session_facts(agent.session, mode)
        if not facts.loom_transcript_path:
            return facts
        where = claude_transcript_file(Path(facts.loom_transcript_path))
        mirror = self._claude_transcript
        if mirror is None or mirror.path != where:  # the first hook, or a new session (/clear)
            mirror = self._claude_transcript = ClaudeTranscript(
                where, session_id=facts.session_id, root=agent.workspace.root,
                redact=agent.config.redactor.redact if agent.config.redact_secrets else None)
        return replace(facts, transcript_path=mirror.sync(agent.messages, model=agent.config.model))
