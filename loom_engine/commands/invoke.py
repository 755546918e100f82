"""Running a custom command or a skill the user typed as ``/name args``.

    invocation = resolve("/fix 123", commands, skills)
    async for event in run_invocation(agent, invocation):
        ...

The model gets the expansion; the conversation keeps what was typed (``/fix 123``) as
the prompt's text for display, resume and a failed request given back.

A command's ``allowed-tools`` are allowed for its turn only: added as a rule layer of
their own before the expansion (its `` !`…` `` commands use them too) and removed when
the turn ends, whatever way it ends. Deny rules and plan mode still win. Its ``model``
is used for that turn only. A skill run this way gets Claude Code's shape: the skill's
folder, its instructions with the arguments put in (or appended as ``ARGUMENTS:``);
its ``allowed-tools`` stay guidance, as when the model loads it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..attachments import UserPrompt
from ..catalog import USER_SOURCES
from ..events import Aborted, AgentEvent, Notice, ToolProgress
from ..messages import Message, TextPart
from ..permissions.layers import RuleLayer
from ..relay import DONE, relay
from ..tools.base import ToolContext, ToolSessionState
from ..tools.pipeline import ToolPipeline
from ..transcript import refused_result_text
from .catalog import CommandCatalog, CommandError, CustomCommand
from .template import shell_snippets, splice, substitute
from .withheld import withheld_note

if TYPE_CHECKING:
    from ..bus import EventBus
    from ..config import AgentConfig
    from ..metrics import RunMetrics
    from ..permissions.manager import PermissionManager
    from ..run import AgentIdentity
    from ..sandbox.sandbox import Sandbox
    from ..skills.catalog import Skill, SkillCatalog
    from ..tools.registry import ToolRegistry
    from ..turn_state import TurnState
    from ..workspace import Workspace

SHELL_TOOL = "bash"
REFUSED_BY_USER_TEXT = refused_result_text().split(":")[0]  # "Refused by the user"
# ``/skill:name`` runs the skill ``name`` even when a custom command of that name hides
# it from ``/name`` (a project's /review and the built-in review skill: both reachable).
SKILL_PREFIX = "skill:"


@dataclass(frozen=True)
class Invocation:
    """What ``/name args`` runs."""

    name: str  # as the command or skill is named
    arguments: str
    typed: str  # the whole line as typed
    kind: Literal["command", "skill"]
    body: str  # the instructions before the arguments are put in
    allowed_tools: tuple[str, ...] = ()  # granted for the turn (commands only)
    model: str | None = None
    # What a project command's file asks to allow, not granted: a file the repository
    # ships may not widen permissions (each action asks as usual).
    withheld_tools: tuple[str, ...] = ()
    # From the project (not the user's own folders, nor Loom's built-in skills): its `!cmd`
    # lines run in the session's sandbox, as the model's bash calls do (the user's own run
    # as they are, like the user's own hooks).
    in_project: bool = False


def split_line(text: str) -> tuple[str, str] | None:
    """("name", "args") of a ``/name args`` line; None for any other text (``/etc/hosts``
    is a path, not a command)."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, rest = stripped[1:].partition(" ")
    head, _, more = head.partition("\n")
    if "/" in head or not head:
        return None
    return head, (more + " " + rest).strip() if more else rest.strip()


def resolve(text: str, commands: CommandCatalog | None, skills: SkillCatalog | None,
            reserved: Iterable[str] = ()) -> Invocation | None:
    """The custom command or user-invocable skill ``text`` names, or None. A built-in
    command (``reserved``) wins over both; a custom command wins over a skill, which
    ``/skill:name`` still reaches. CommandError when the file cannot be read now."""
    parts = split_line(text)
    if parts is None:
        return None
    name, arguments = parts
    if name.lower() in {r.lower() for r in reserved}:
        return None
    if name.lower().startswith(SKILL_PREFIX):
        name, commands = name[len(SKILL_PREFIX):], None  # the skill, never a command
    command = commands.get(name) if commands is not None else None
    skill = skills.get(name.lower()) if skills is not None else None
    try:
        if command is not None:
            return from_command(command, arguments, text.strip())
        if skill is not None and user_invocable(skill):
            return from_skill(skill, arguments, text.strip())
    except (OSError, ValueError) as error:  # the file changed or went since it was found
        raise CommandError(f"/{name} cannot be run: {error}") from None
    return None


def user_invocable(skill: Skill) -> bool:
    return bool(getattr(skill, "user_invocable", True))


def from_command(command: CustomCommand, arguments: str, typed: str) -> Invocation:
    if command.source not in USER_SOURCES:
        return Invocation(command.name, arguments, typed, "command", command.read_body(), (), command.model,
                          withheld_tools=command.allowed_tools, in_project=True)
    return Invocation(command.name, arguments, typed, "command", command.read_body(), command.allowed_tools,
                      command.model)


def from_skill(skill: Skill, arguments: str, typed: str) -> Invocation:
    body = f"Base directory for this skill: {skill.folder}\n\n{skill.read_body()}"
    return Invocation(skill.name, arguments, typed, "skill", body, in_project=skill.source == "project")


@dataclass(frozen=True)
class CommandPrompt(UserPrompt):
    """A prompt whose ``text`` is what the user typed and whose message carries the
    expansion: the UI, a resumed session and a failed request given back show
    ``/fix 123``, the model reads the instructions."""

    expansion: str = ""
    command: str = ""

    def message(self) -> Message:
        parts = (TextPart(self.expansion), *(TextPart(a.block()) for a in self.attachments))
        meta: dict[str, Any] = {"prompt": self.text, "command": self.command}
        if self.attachments:
            meta["attachments"] = [a.summary() for a in self.attachments]
        return Message("user", parts, meta=meta)


class CommandAgent(Protocol):
    """What running a command uses of the agent (loom_engine.agent.Agent has it all)."""

    # Read-only: a command reads these and never replaces them (so a Protocol that
    # offers them as properties, loom_cli's ChatAgent, satisfies this one).
    @property
    def workspace(self) -> Workspace: ...
    @property
    def permissions(self) -> PermissionManager | None: ...
    @property
    def sandbox(self) -> Sandbox | None:
        """A project command's `!cmd` lines run in it like the model's bash calls (None: unconfined)."""
        ...
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def messages(self) -> tuple[Message, ...]: ...
    @property
    def bus(self) -> EventBus: ...
    @property
    def metrics(self) -> RunMetrics: ...
    @property
    def identity(self) -> AgentIdentity: ...

    @property
    def config(self) -> AgentConfig: ...

    @property
    def turn_state(self) -> TurnState: ...

    async def attach(self, prompt: str) -> UserPrompt: ...

    def run(self, prompt: str | UserPrompt) -> AsyncIterator[AgentEvent]: ...

    def set_model(self, model: str) -> None: ...


class Grant:
    """A command's allowed-tools as a rule layer of its own, for one turn."""

    def __init__(self, permissions: PermissionManager | None, name: str, rules: tuple[str, ...]) -> None:
        self._permissions = permissions
        self.source = f"the /{name} command (this turn)"
        self._rules = rules
        self._added: list[str] = []

    def apply(self) -> list[str]:
        """Add the rules; the problems of those that could not be added."""
        problems: list[str] = []
        if self._permissions is None:
            return problems
        store = self._permissions.rules
        for text in self._rules:
            try:
                compiled = store.compile("allow", text, self.source)
                store.add(RuleLayer(self.source, allow=(text,)))
            except ValueError as error:
                problems.append(str(error))
                continue
            self._added.append(compiled.rule.text)
        return problems

    @property
    def granted(self) -> tuple[str, ...]:
        return tuple(self._added)

    def revoke(self) -> None:
        if self._permissions is None:
            return
        for text in self._added:
            self._permissions.rules.remove("allow", text, self.source)
        self._added.clear()


async def run_invocation(agent: CommandAgent, invocation: Invocation) -> AsyncGenerator[AgentEvent, None]:
    """Expand the command (arguments, shell commands, @files) and run the model on it."""
    stamp = _stamper(agent)
    grant = Grant(agent.permissions, invocation.name, invocation.allowed_tools if invocation.kind == "command"
                  else ())
    previous_model: str | None = None
    try:
        for problem in grant.apply():
            yield Notice(level="warning", message=f"/{invocation.name}: allowed-tools left out: {problem}",
                         **stamp())
        # Said once a conversation, and only for rules that would have spared a question.
        withheld = withheld_note(invocation.name, invocation.withheld_tools, agent.permissions,
                                 agent.workspace.root, agent.messages)
        if withheld is not None:
            yield Notice(level="info", message=withheld, **stamp())
        if grant.granted:  # the user sees what the command's file allows without asking
            yield Notice(level="info", message=f"/{invocation.name} allows for this turn: "
                         f"{', '.join(grant.granted)}", **stamp())
        if invocation.model and invocation.model != agent.config.model:
            from ..providers.models import lookup

            previous_model = agent.config.model
            agent.set_model(invocation.model)
            unknown = "" if lookup(invocation.model).known else " (a model Loom does not know: the request may fail)"
            yield Notice(level="warning" if unknown else "info",
                         message=f"/{invocation.name} uses {invocation.model} for this turn{unknown}", **stamp())
        text = substitute(invocation.body, invocation.arguments)
        snippets = shell_snippets(text)
        if snippets:
            agent.bus.reset()  # a fresh token: an earlier interrupt must not stop these
            outputs: list[str] = []
            sandbox = agent.sandbox if invocation.in_project else None
            async with aclosing(_run_shell(agent, [s.command for s in snippets], outputs, stamp, sandbox)) as events:
                async for event in events:
                    yield event
            if agent.bus.aborted:
                reason = agent.bus.cancel_token.reason or "interrupted by user"
                yield Aborted(reason=f"{reason} (/{invocation.name} was not sent)", **stamp())
                return
            text = splice(text, snippets, outputs)
        attached = await agent.attach(text)
        prompt = CommandPrompt(invocation.typed, attached.attachments, expansion=text, command=invocation.name)
        run_events = agent.run(prompt)
        try:
            async for event in run_events:
                yield event
        finally:
            close = getattr(run_events, "aclose", None)
            if close is not None:  # the agent is free again however this ends
                await close()
    finally:
        grant.revoke()
        if previous_model is not None:
            agent.set_model(previous_model)


def _stamper(agent: CommandAgent) -> Callable[[], Mapping[str, Any]]:
    def stamp() -> Mapping[str, Any]:
        state = agent.turn_state
        return {"turn_id": state.turn_id, "agent_id": agent.identity.agent_id,
                "parent_tool_use_id": agent.identity.parent_tool_use_id,
                "parent_turn_id": state.parent_turn_id, "depth": agent.identity.depth}
    return stamp


async def _run_shell(agent: CommandAgent, commands: list[str], outputs: list[str],
                     stamp: Callable[[], Mapping[str, Any]],
                     sandbox: Sandbox | None) -> AsyncGenerator[AgentEvent, None]:
    """Run each command as a bash call would run (the permission check, asked about in
    the chat, denied when a headless run would have to ask), inside ``sandbox`` when
    given; its events as they come. ``outputs`` gets what replaces each command in the text."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    config = agent.config
    cancel = agent.bus.cancel_token
    state = ToolSessionState()  # a `cd` in a command's line does not move the agent's shell

    def context(call_id: str) -> ToolContext:
        return ToolContext(workspace=agent.workspace, cancel=cancel, state=state, call_id=call_id,
                           progress=lambda line: queue.put_nowait(ToolProgress(call_id=call_id, text=line,
                                                                                **stamp())),
                           emit=queue.put_nowait, sandbox=sandbox, read_rules=agent.permissions)

    pipeline = ToolPipeline(registry=agent.registry, bus=agent.bus, metrics=agent.metrics, make_context=context,
                            emit=queue.put_nowait, stamp=stamp, permissions=agent.permissions,
                            interactive=config.interactive, redact=config.redact_secrets,
                            redactor=config.redactor, timeout_s=config.tool_timeout_s)

    async def work() -> None:
        try:
            for command in commands:
                outputs.append(await _one(pipeline, command, cancel.cancelled))
        finally:
            queue.put_nowait(DONE)

    task = asyncio.create_task(work())
    try:
        # A line not run yet is left out at once: its output would reach no one.
        async with aclosing(relay(queue, task, task.cancel)) as events:
            async for event in events:
                yield event
    finally:
        while len(outputs) < len(commands):
            outputs.append(f"[`{commands[len(outputs)]}` was not run: interrupted]")


async def _one(pipeline: ToolPipeline, command: str, cancelled: bool) -> str:
    if cancelled:
        return f"[`{command}` was not run: interrupted]"
    if pipeline.registry.get(SHELL_TOOL) is None:
        return f"[`{command}` was not run: this agent has no bash tool]"
    from ..messages import ToolUsePart

    call = ToolUsePart(id="command_" + uuid.uuid4().hex[:12], name=SHELL_TOOL, input={"command": command})
    try:
        outcome = await pipeline.run(call)
    except asyncio.CancelledError:
        return f"[`{command}` was not run: interrupted]"
    content = outcome.result.content
    if outcome.result.is_error and content.startswith(REFUSED_BY_USER_TEXT):
        return f"[`{command}` was not run: the user refused it]"
    if outcome.result.is_error and content.startswith(("Permission denied", "Refused")):
        # The denial's reason, without its advice to the model (it is for a tool call).
        reason = content.splitlines()[0].split(" Do not retry")[0].split("; the user has not allowed")[0]
        return f"[`{command}` was not run: {reason.rstrip('.')}]"
    return content.removesuffix("\nExit code: 0")
