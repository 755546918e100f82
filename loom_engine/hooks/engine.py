"""The hook engine an agent holds: builds the payload, runs the matching hooks in
parallel, reports each run as a :class:`HookRan` event and combines their answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import AgentEvent, HookRan, Notice
from ..execution import CancelToken
from ..messages import Message
from ..permissions.modes import CLAUDE_MODE_NAMES, PermissionMode
from ..private_files import open_private
from .config import HookCommand, HookEventName, HookSet
from .outcome import HookVerdict, combine, describe, interpret
from .runner import RawRun, command_line, confining, hook_environment, run_hook

if TYPE_CHECKING:
    from ..sandbox.sandbox import Sandbox

Emit = Callable[[AgentEvent], None]
Stamp = Callable[[], Mapping[str, Any]]


def hook_context_message(texts: Sequence[str]) -> Message:
    """What hooks added for the model (SessionStart output, UserPromptSubmit context),
    as a reminder after the prompt: never in the system prompt, whose cache it would break."""
    return Message.user("<system-reminder>\nContext from the user's hooks, not typed by the user.\n"
                        + "\n\n".join(texts) + "\n</system-reminder>", reminder=True, hook_context=True)


@dataclass(frozen=True)
class HookSession:
    """What every payload says about where the hook runs."""

    session_id: str = ""
    # The conversation in Claude Code's transcript format (see claude_transcript), which
    # hook scripts read; "" when there is no session file.
    transcript_path: str = ""
    permission_mode: str = "default"
    loom_transcript_path: str = ""  # Loom's own session file


def session_facts(session: object, mode: PermissionMode) -> HookSession:
    """What the payloads say of the session: its id, its Loom file, and the permission
    mode in Claude Code's words (which hook scripts compare against). The caller adds
    the Claude Code-format transcript."""
    path = getattr(session, "path", None)
    return HookSession(session_id=str(getattr(session, "id", "") or ""),
                       loom_transcript_path=str(path) if path is not None else "",
                       permission_mode=CLAUDE_MODE_NAMES[mode])


@dataclass
class HookEngine:
    hooks: HookSet
    root: Path
    # Read at each event: the session may start, and the mode may change, mid-conversation.
    session: Callable[[], HookSession] = field(default=HookSession)
    agent_id: str | None = None  # set inside sub-agents
    agent_type: str | None = None
    # Applied to what a hook prints before anything of it reaches the model or the user:
    # a hook that prints its environment must not send an API key in the next request.
    redact: Callable[[str], str] | None = None
    # The session's sandbox: a project's hooks run inside it (None: unconfined).
    sandbox: Sandbox | None = None

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def wants(self, event: HookEventName, *names: str) -> bool:
        """Whether any hook would run (a cheap check before building a payload)."""
        return bool(self.hooks.for_event(event, *names))

    def child(self, agent_id: str, agent_type: str) -> HookEngine:
        return HookEngine(self.hooks, self.root, self.session, agent_id=agent_id, agent_type=agent_type,
                          redact=self.redact, sandbox=self.sandbox)

    async def fire(self, event: HookEventName, fields: Mapping[str, Any], *, names: tuple[str, ...] = (),
                   call_id: str | None = None, cancel: CancelToken | None = None,
                   emit: Emit, stamp: Stamp) -> HookVerdict:
        """Run the hooks of ``event`` whose matcher accepts one of ``names``; an empty
        verdict (nothing to do) when none match."""
        # The same command from two files (.claude/settings.json and .loom/settings.toml,
        # say) runs once, as in Claude Code.
        first: dict[str, HookCommand] = {}
        for hook in self.hooks.for_event(event, *names):
            first.setdefault(command_line(hook), hook)
        matching = tuple(first.values())
        if not matching:
            return HookVerdict()
        session = self.session()
        payload: dict[str, Any] = {
            "session_id": session.session_id, "transcript_path": session.transcript_path, "cwd": str(self.root),
            "permission_mode": session.permission_mode, "hook_event_name": event,
            "loom_transcript_path": session.loom_transcript_path}
        if self.agent_id is not None:
            payload["agent_id"] = self.agent_id
            payload["agent_type"] = self.agent_type or ""
        payload.update(fields)
        raws = await asyncio.gather(*(self._run(h, payload, cancel) for h in matching))
        if self.redact is not None:
            redact = self.redact
            raws = [replace(raw, stdout=redact(raw.stdout), stderr=redact(raw.stderr)) for raw in raws]
        results = [interpret(h, event, raw) for h, raw in zip(matching, raws, strict=True)]
        for result in results:
            emit(HookRan(event=event, command=command_line(result.hook), source=result.hook.source,
                         outcome=result.outcome, duration_ms=result.duration_ms, message=result.message,
                         call_id=call_id, **stamp()))
            if result.system_message:
                emit(Notice(level="info", message=f"hook {describe(result.hook)}: {result.system_message}",
                            **stamp()))
        return combine(results)

    async def _run(self, hook: HookCommand, payload: Mapping[str, Any], cancel: CancelToken | None) -> RawRun:
        with self._as_seen_by(hook, payload) as data:
            # Each hook its own environment: a project's hooks do not get Loom's credentials.
            return await run_hook(hook, data, cwd=self.root, env=hook_environment(self.root, hook), cancel=cancel,
                                  sandbox=self.sandbox)

    @contextlib.contextmanager
    def _as_seen_by(self, hook: HookCommand, payload: Mapping[str, Any]) -> Iterator[bytes]:
        """The payload for ``hook``. A project's hook runs in the sandbox, which hides Loom's
        folders (every session is there): it gets a copy of this session's transcript in
        the sandbox's temp folder, removed when the hook ends."""
        sandbox = confining(hook, self.sandbox)
        source = str(payload.get("transcript_path") or "")
        if sandbox is None or not source:
            yield json.dumps(payload, default=str).encode("utf-8")
            return
        copy = sandbox.temp_dir / f"loom-transcript-{uuid.uuid4().hex}.jsonl"
        try:
            with open(source, "rb") as original, open_private(copy, "w") as target:
                target.write(original.read().decode("utf-8"))
            seen = sandbox.inside(copy)
        except (OSError, UnicodeDecodeError):
            seen = ""
        try:
            yield json.dumps({**payload, "transcript_path": seen, "loom_transcript_path": ""},
                             default=str).encode("utf-8")
        finally:
            copy.unlink(missing_ok=True)

    async def fire_alone(self, event: HookEventName, fields: Mapping[str, Any], name: str,
                         stamp: Mapping[str, Any]) -> tuple[HookVerdict, tuple[AgentEvent, ...]]:
        """Outside a run (SessionStart, SessionEnd, an idle notification): the verdict and
        the events to show, collected instead of streamed."""
        if not self.wants(event, name):
            return HookVerdict(), ()
        events: list[AgentEvent] = []
        verdict = await self.fire(event, fields, names=(name,), cancel=CancelToken(), emit=events.append,
                                  stamp=lambda: stamp)
        return verdict, tuple(events)
