"""Starting a turn from what the user sent, shared by the chat and ``loom run``.

Textual-free: the headless runner imports it as the chat does. What is the same on both
sides lives here: a custom command's or a skill's expansion runs through
``run_invocation``; any other prompt runs the model with the files and folders it
``@``-mentions attached (``ChatAgent.attach``) and the MCP resources it names as
``@server:uri`` (redacted like files). What differs stays with each side: the chat's
``!command`` and its MCP-prompt wording (``tui/user_turns.py``), the headless exit codes
(``headless.py``).

The session hooks' runs are shared too: each side asks for the hooks that failed or
blocked and words them its own way (a transcript notice, a stderr line).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from loom_engine.attachments import UserPrompt
    from loom_engine.commands.invoke import Invocation
    from loom_engine.events import AgentEvent, HookRan

    from .chat_agent import ChatAgent

SessionHook = Literal["session_started", "session_ended", "notify_idle"]


async def start_turn(agent: ChatAgent, text: str, invocation: Invocation | None = None
                     ) -> AsyncGenerator[AgentEvent, None]:
    """The events of one sent prompt: ``invocation`` (a custom command or a skill that
    ``text`` names) expanded and run, or else the model run on ``text`` with its
    mentions attached. Closing this stream closes the run's (a command's turn-only
    grants end with it)."""
    if invocation is not None:
        from loom_engine.commands.invoke import run_invocation

        stream = run_invocation(agent, invocation)  # the command's text, its !`…` and @files
    else:
        stream = agent.run(await attach_mentions(agent, text))
    async with aclosing(stream):
        async for event in stream:
            yield event


async def attach_mentions(agent: ChatAgent, text: str) -> str | UserPrompt:
    """``text`` with its ``@path`` files and ``@server:uri`` MCP resources attached; the
    plain text when it mentions nothing."""
    if "@" not in text:
        return text
    prompt = await agent.attach(text)
    manager = agent.mcp
    if manager is None:
        return prompt
    from loom_engine.mcp.mentions import attach_resources

    config = agent.config
    redact = config.redactor.redact if config.redact_secrets else None
    return await attach_resources(prompt, manager, redact=redact)


async def session_hook_failures(agent: ChatAgent, hook: SessionHook, argument: str) -> tuple[HookRan, ...]:
    """Run the SessionStart / SessionEnd / idle Notification hooks; the runs that failed
    or blocked, with a message to show."""
    from loom_engine.events import HookRan

    match hook:
        case "session_started":
            events = await agent.session_started(argument)
        case "session_ended":
            events = await agent.session_ended(argument)
        case "notify_idle":
            events = await agent.notify_idle(argument)
    return tuple(e for e in events if isinstance(e, HookRan) and e.outcome != "ok" and e.message)
