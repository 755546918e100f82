"""Commands on the session as a whole: /clear (a new one), /resume (an earlier one), /compact,
and /continue (the model goes on with an answer its output limit cut off)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...slash_commands import ParsedCommand, SlashCommand

if TYPE_CHECKING:
    from loom_engine.index.query import SearchHit

    from ..chat_host import ChatHost
    from ..session_picker import SessionSearch


def default_session_lister(workspace: Path) -> Sequence[Any]:
    """The earlier sessions of ``workspace``, from the session store (what /resume lists
    unless the options give another lister)."""
    from loom_engine.paths import sessions_dir
    from loom_engine.sessions.store import SessionStore

    infos, _warnings = SessionStore(sessions_dir()).list(workspace)
    return infos


def session_search(data: Path, workspace: Path, current: str | None) -> SessionSearch:
    """What typing in /resume's picker searches: the index of the sessions in ``data``,
    this workspace's only, the current session left out. Caught up once (here, in a
    worker thread, as the picker opens), then only queried at each key."""
    from loom_engine.index.session_index import SessionIndex

    index = SessionIndex.in_data_dir(data)
    index.catch_up()
    exclude = (current,) if current else ()

    def search(typed: str) -> Sequence[SearchHit]:
        return index.search(typed, project=str(workspace), limit=50, exclude=exclude, as_you_type=True,
                            refresh=False)

    return search


def clear(host: ChatHost, _command: ParsedCommand) -> None:
    """A new session; a conversation of more than one prompt is asked about first."""
    from loom_engine.messages import prompt_count

    from ...wording import conversation_length
    from ..confirm import Confirm

    count = prompt_count(host.agent.messages if host.agent is not None else ())

    def confirmed(yes: bool | None) -> None:
        if yes:
            host.run_worker(new_session(host), group="agent", exit_on_error=False)
        else:
            host.output("/clear cancelled: the conversation is kept")

    if count > 1:
        host.push_screen(Confirm(f"Clear this conversation ({conversation_length(count)}) and start a new session?",
                                 "The old session stays saved: /resume reopens it."), callback=confirmed)
        return
    host.run_worker(new_session(host), group="agent", exit_on_error=False)


async def new_session(host: ChatHost) -> None:
    if host.busy:
        host.interrupt()
    had_messages = host.agent is not None and bool(host.agent.messages)
    remembered = ""
    if had_messages:
        from .memory import offer_proposals

        remembered = await offer_proposals(host)
    await host.replace_agent(replace(host.options, continue_session=False, resume_id=None), "new session started")
    if remembered:
        host.output(remembered)
    if had_messages:
        host.transcript.add_notice("the previous session can be reopened with /resume", "info")


async def resume(host: ChatHost, command: ParsedCommand) -> None:
    """/resume ID switches to that session; /resume alone lets the user pick one."""
    from ..session_picker import SessionPicker

    session_id = command.arg
    if host.busy:
        host.output("wait for the current run to end before resuming another session")
        return
    if session_id:
        await host.replace_agent(replace(host.options, resume_id=session_id, continue_session=False), "")
        return
    agent = host.agent
    assert agent is not None  # needs_agent: the registry checked
    lister = host.options.session_lister or default_session_lister
    try:
        sessions = await asyncio.to_thread(lister, Path(agent.workspace.root))
    except Exception as error:
        host.output(f"cannot list sessions: {error}")
        return
    sessions = [s for s in sessions if s.id != agent.session_id]
    if not sessions:
        host.output("no earlier sessions in this workspace")
        return
    from loom_engine.paths import data_dir

    try:
        search: SessionSearch | None = await asyncio.to_thread(
            session_search, host.options.data_dir or data_dir(), Path(agent.workspace.root), agent.session_id)
    except Exception as error:  # the list still opens, without search
        host.output(f"session search is unavailable: {error}")
        search = None

    def picked(chosen: str | None) -> None:
        if chosen:
            host.run_worker(host.replace_agent(replace(host.options, resume_id=chosen, continue_session=False), ""),
                            group="agent", exit_on_error=False)

    host.push_screen(SessionPicker(sessions, search), callback=picked)


def compact(host: ChatHost, command: ParsedCommand) -> None:
    if host.busy:
        host.output("wait for the current run to end before compacting")
        return
    focus = command.arg or None
    host.output("compacting the conversation…" + (f" (focus: {focus})" if focus else ""))
    host.compact(focus)


def continue_answer(host: ChatHost, _command: ParsedCommand) -> None:
    """Ask the model to go on where its last answer stopped: a prompt of its own, sent
    (or queued behind a running turn) like one the user typed, so the transcript shows it."""
    from ...stop_reason import CONTINUE_PROMPT
    from ..paste import Draft

    host.prompt_queue.add(Draft(CONTINUE_PROMPT))
    host.send_queued()


CLEAR = SlashCommand("clear", "start a new session", clear)
COMPACT = SlashCommand("compact", "summarise the conversation now  [focus]", compact,
                       usage="/compact [focus]", max_words=None)
RESUME = SlashCommand("resume", "resume an earlier session of this workspace  [id]", resume,
                      usage="/resume [id]", max_words=1)
CONTINUE = SlashCommand("continue", "let the model go on with an answer the output limit cut off",
                        continue_answer)
