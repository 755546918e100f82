"""Driving an agent's runs: the prompt submitted, the turns driven in a task, the run
closed however it ends (finished, aborted, crashed) and its events relayed to the caller.

:class:`Agent` builds each :class:`Run` and hands it here; :class:`AgentRuns` keeps what one
run leaves for the next: the turn state, context hooks added for the next prompt, a prompt
taken back unsent, and whether a run is going. Like :class:`Run`, it does not know the
agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .attachments import UserPrompt
from .events import Aborted, AgentEvent, Error, Finished, Notice
from .execution import Cancelled, CancelToken
from .hooks.engine import hook_context_message
from .hooks.outcome import HookVerdict
from .messages import Message
from .relay import DONE, relay
from .run import Run
from .turn import drive
from .turn_state import TurnState

if TYPE_CHECKING:
    from .tools.base import ToolSessionState
    from .tools.source import ToolSource
    from .workspace import Workspace


@dataclass(frozen=True)
class UnsentPrompt:
    """A prompt taken back out of the conversation: the request failed before any answer."""

    text: str
    error: Error  # why the run ended


class AgentRuns:
    """One agent's runs, one at a time, and what each leaves for the next."""

    def __init__(self, state: TurnState, workspace: Workspace) -> None:
        self.state = state  # as the last run left it: the next one starts from it
        self.running = False  # a run or a user's command is going (the agent takes one at a time)
        self.unsent: UnsentPrompt | None = None
        # What SessionStart hooks printed: context for the next request.
        self.hook_context: list[str] = []
        from .context.assembler import ChangingFacts

        self._changing_facts = ChangingFacts(workspace)

    def take_unsent(self) -> UnsentPrompt | None:
        """The last run's prompt if it was taken back unsent; asked once."""
        unsent, self.unsent = self.unsent, None
        return unsent

    async def relay_events(self, queue: asyncio.Queue[Any], task: asyncio.Task[None], cancel: CancelToken
                           ) -> AsyncGenerator[AgentEvent, None]:
        """The events ``task`` puts on ``queue``; a consumer that stops listening ends the
        run through its cancel token (the turn is closed cleanly). The agent is free after."""
        try:
            async with aclosing(relay(queue, task, lambda: cancel.cancel("the event consumer stopped listening"))
                                ) as events:
                async for event in events:
                    yield event
        finally:
            self.running = False

    async def _submit(self, run: Run, prompt: str | UserPrompt, tool_state: ToolSessionState) -> str | None:
        """Run the UserPromptSubmit hooks, then add the prompt (and what hooks added) to
        the conversation; the prompt's message id, or None when a hook blocked it (it is
        then neither sent nor kept, and the run ends)."""
        deps = run.deps
        typed = prompt.text if isinstance(prompt, UserPrompt) else prompt
        try:
            # The user's prompts only, as in Claude Code: a sub-agent's task is the model's
            # words, and a hook guarding what the user types must not stop it.
            verdict = (await run.fire_hooks("UserPromptSubmit", {"prompt": typed}) if deps.identity.depth == 0
                       else HookVerdict())
        except (Cancelled, asyncio.CancelledError):
            run.emit(Aborted(reason=run.cancel.reason or "interrupted by user", **run.stamp()))
            return None
        if verdict.blocked or verdict.stop:
            why = verdict.reason or verdict.stop_reason or "a UserPromptSubmit hook blocked it"
            run.emit(Notice(level="warning", message=f"your prompt was not sent: {why}", **run.stamp()))
            run.emit(Finished(result="", num_turns=0, **run.stamp()))
            return None
        message = prompt.message() if isinstance(prompt, UserPrompt) else Message.user(prompt)
        if deps.checkpoints is not None and deps.identity.depth == 0:
            config, session = deps.client.config, deps.transcript.session
            shown = config.redactor.redact(typed) if config.redact_secrets else typed
            session_id = session.id if session is not None else None
            await deps.checkpoints.before_prompt(session_id, message.id, shown)  # its log names the prompt
        deps.transcript.append(message)
        run.prompt_submitted(typed)
        if isinstance(prompt, UserPrompt):
            for level, lines in prompt.notes():  # the user sees what the model got
                run.emit(Notice(level=level, message="\n".join(lines), **run.stamp()))
        # Facts that changed since the last turn go at the end of the conversation, never
        # into the system prompt, so the cached prefix stays byte-identical.
        reminder = self._changing_facts.collect(tool_state)
        if reminder:
            deps.transcript.append(Message.user(reminder, reminder=True))
        added = [*self.hook_context, *([f"UserPromptSubmit hook:\n{verdict.context}"] if verdict.context else [])]
        self.hook_context.clear()
        if added:
            deps.transcript.append(hook_context_message(added))
        return message.id

    async def drive(self, run: Run, queue: asyncio.Queue[Any], prompt: str | UserPrompt | None = None,
                    errors: list[Error] | None = None, *, tool_source: ToolSource | None,
                    tool_state: ToolSessionState) -> None:
        """Submit ``prompt`` and drive the run's turns to the end, then put :data:`DONE`
        on ``queue``; ``errors`` are the run's top-level errors so far (the last says why
        an unanswered prompt was taken back)."""
        deps = run.deps
        try:
            taken: tuple[str, str, list[Error]] | None = None
            if prompt is not None:
                prompt_id = await self._submit(run, prompt, tool_state)
                if prompt_id is None:
                    return
                taken = (prompt_id, prompt.text if isinstance(prompt, UserPrompt) else prompt,
                         errors if errors is not None else [])
            if tool_source is not None:
                await tool_source.settle()  # the first request waits a little for MCP servers
            final = await drive(self.state, run)
            self.state = final
            deps.transcript.save_turn_state(final, run_end=final.stop_reason)
            if final.stop_reason == "error" and taken is not None:
                self._take_back(run, *taken)
        except (asyncio.CancelledError, Exception) as error:
            if isinstance(error, asyncio.CancelledError) or run.cancel.cancelled:
                self._close_aborted(run)
            else:
                self._close_crashed(run, error)
        finally:
            try:
                await run.pipeline.settle()  # notification hooks still running end with the run
                if deps.checkpoints is not None and deps.identity.depth == 0:
                    await deps.checkpoints.after_run()
            finally:
                queue.put_nowait(DONE)

    def _take_back(self, run: Run, prompt_id: str, text: str, errors: list[Error]) -> None:
        """A request that failed before any answer (401, 529 after retries...) leaves the
        prompt unanswered; kept, the next prompt would be merged with it unseen. It is
        taken out, and the caller can offer it again (the chat puts it back in the input)."""
        if errors and run.deps.transcript.drop_unanswered_prompt(prompt_id):
            self.unsent = UnsentPrompt(text, errors[-1])

    def _close_aborted(self, run: Run) -> None:
        reason = run.cancel.reason or "interrupted by user"
        partial, what = run.close_interrupted(reason)
        self._finish_stopped(run, "aborted")
        run.emit(Aborted(reason=f"{reason} ({what})", partial_text=partial, **run.stamp()))

    def _close_crashed(self, run: Run, error: BaseException) -> None:
        # An engine bug must still leave a transcript the next request can use.
        run.close_interrupted(f"internal error: {error}", keep_partial=False)
        self._finish_stopped(run, "error")
        run.deps.metrics.errors[f"internal:{type(error).__name__}"] += 1
        run.emit(Error(message=f"internal error: {type(error).__name__}: {error}", kind="internal",
                       **run.stamp()))

    def _finish_stopped(self, run: Run, reason: str) -> None:
        self.state = run.state.turn_state.next_turn().finish(reason)
        run.deps.transcript.save_turn_state(self.state, run_end=reason)


async def cancel_when_aborted(cancel: CancelToken, task: asyncio.Task[None]) -> None:
    """Cancel ``task`` once ``cancel`` is set (the abort reaches a run waiting anywhere)."""
    await cancel.wait()
    task.cancel()
