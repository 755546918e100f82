"""Rewind in the chat: the prompts, the menu, the preview, then the rewind and what the
user sees after it (a one-line summary, the conversation as it was before that prompt,
the prompt's text back in the input to edit and resend).

The last rewind of the chat can be undone from the same list (its first row): the files
as they were just before it (the engine snapshots them before any restore) and the
conversation, unless the conversation went on since (then only the files come back).
Git and the session file are touched in threads, never on the UI's loop.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from loom_engine.messages import is_prompt
from loom_engine.sessions.store import SessionError, SessionStore, SessionWriter
from loom_engine.snapshots.model import RestorePlan, RestorePoint, RestoreResult, RewindMode, StalePlan
from loom_engine.snapshots.preimages import PreimageCheckpointer
from loom_engine.snapshots.restore import Snapshots, prompt_text, restore_points, snapshots_of
from loom_engine.snapshots.rewind import RewindError, plan_for, plan_undo, rewind, undo_rewind
from loom_engine.snapshots.shadow import ShadowError

from ...slash_commands import ParsedCommand, SlashCommand
from ...wording import plural
from .rewind_undo import RewindUndo

if TYPE_CHECKING:
    from loom_engine.messages import Message

    from ...chat_agent import ChatAgent
    from ..chat_host import ChatHost
    from ..rewind_preview import PreviewAnswer

_FAILURES = (RewindError, StalePlan, ShadowError, OSError)


# Said in the menu when git is missing and only pre-images of Loom's own edits are kept.
PREIMAGES_NOTE = "Without git, only files Loom's edit tools changed can be restored (not what bash did)."


def checkpointer_of(agent: ChatAgent) -> Snapshots | None:
    return snapshots_of(agent.checkpoints)


def no_snapshots_reason() -> str:
    """Why an agent has no snapshots (without git, bootstrap keeps pre-images unless turned off)."""
    return "snapshots of the files are turned off" + (" (and git is not installed)" if shutil.which("git") is None
                                                      else "")


async def plan_of(checkpointer: Snapshots | None, point: RestorePoint, session_id: str | None
                  ) -> tuple[RestorePlan | None, str | None]:
    """The preview of restoring the files to before ``point``, or why they cannot be."""
    if checkpointer is None:
        return None, no_snapshots_reason()
    if not point.can_restore_code:
        return None, "no snapshot of the files from then"
    try:
        plan = await asyncio.to_thread(plan_for, checkpointer, point, session_id=session_id)
    except _FAILURES as error:
        return None, f"the snapshots cannot be read ({error})"
    if plan.empty:
        return plan, "the files are already as they were then"
    if all(change.blocked is not None for change in plan.changes):
        return plan, "the files that differ were not changed by Loom: they are left alone"
    return plan, None


def with_conflicts(plan: RestorePlan, answer: PreviewAnswer) -> RestorePlan:
    """The plan to apply with ``include_conflicts``: the conflicts not ticked are taken out."""
    return replace(plan, changes=tuple(c for c in plan.changes if not c.conflict or c.path in answer.included))


def files_words(result: RestoreResult, plan: RestorePlan, answer: PreviewAnswer) -> str:
    restored = sum(1 for c in result.restored if c.action != "delete")
    deleted = len(result.restored) - restored
    done = ([f"restored {plural(restored, 'file')}"] if restored else []) + (
        [f"deleted {plural(deleted, 'file')}"] if deleted else [])
    words = ", ".join(done) or "no file changed"
    left = sum(1 for c in plan.conflicts if c.path not in answer.included)
    if left:
        words += f" · {plural(left, 'file')} changed outside Loom left alone"
    if result.errors:
        words += f" · ✗ {plural(len(result.errors), 'file')} failed: {'; '.join(result.errors[:3])}"
    return words


def visible(messages: Sequence[Message]) -> list[Message]:
    """The conversation as the transcript shows it (notes for the model are not shown)."""
    return [m for m in messages if not m.meta.get("reminder")]


async def show_conversation(app: ChatHost, messages: Sequence[Message]) -> None:
    from ..transcript import entries_from_messages

    await app.transcript.load_history(entries_from_messages(visible(messages)), app.options.resume_window)
    app.run_view.forget_tools()


def saved_undo(agent: ChatAgent) -> RewindUndo | None:
    """The last rewind the session file keeps (made before Loom was restarted), to undo it."""
    writer = agent.session
    if not isinstance(writer, SessionWriter):  # only the store's own file keeps rewinds
        return None
    path, session_id = writer.path, writer.id
    try:
        last = SessionStore(path.parent).load(session_id).last_rewind
    except (SessionError, OSError, ValueError):
        return None
    if last is None or not last.prompt_id:  # never rewound, or the last one was undone
        return None
    prompts = [m for m in last.before if is_prompt(m)]
    index = next((i for i, m in enumerate(prompts, 1) if m.id == last.prompt_id), 0)
    # The conversation went on since (added_since): only the files can come back.
    now = frozenset() if last.added_since else frozenset(m.id for m in visible(agent.messages))
    return RewindUndo(agent=agent, index=index, undo_snapshot=last.undo_snapshot,
                      previous=last.before if last.mode != "code" else None, after=now,
                      prompt_text=prompt_text(prompts[index - 1]) if index else "")


def undo_offer(app: ChatHost) -> tuple[RewindUndo, bool] | None:
    """The last rewind if it can still be undone, and whether its conversation can come back."""
    last = app.last_rewind
    if last is None or app.agent is None or last.agent is not app.agent:
        return None
    now = {m.id for m in visible(app.agent.messages)}
    went_on = not now <= last.after
    if last.undo_snapshot is None and (went_on or last.previous is None):
        return None
    return last, not went_on and last.previous is not None


def undo_words(last: RewindUndo, conversation: bool) -> str:
    parts = (["files"] if last.undo_snapshot is not None else []) + (["conversation"] if conversation else [])
    verb = "comes back" if parts == ["conversation"] else "come back"
    return f"(to prompt {last.index}): {' and '.join(parts)} {verb}"


async def open_rewind(app: ChatHost) -> None:
    """/rewind and Esc Esc: pick a prompt, then what to restore, preview, apply."""
    try:
        await _rewind(app)
    finally:
        app.key_hold.release()  # when the list never showed (nothing to rewind, an error)


async def _rewind(app: ChatHost) -> None:
    from ..rewind_menu import NEVER_MIND, RewindMenu, menu_choices
    from ..rewind_picker import UNDO_ID, RewindPicker, one_line
    from ..rewind_preview import PreviewAnswer, RewindPreview

    agent = app.agent
    if agent is None:
        app.output("the agent is still loading; try again in a moment")
        return
    if app.busy:
        app.output("wait for the current run to end (or press Esc) before rewinding")
        return
    checkpointer = checkpointer_of(agent)
    messages = list(agent.messages)
    try:
        points = await asyncio.to_thread(restore_points, checkpointer, messages)
    except _FAILURES:  # the snapshots cannot be read: the conversation can still go back
        points = restore_points(None, messages)
    if app.last_rewind is None or app.last_rewind.agent is not agent:  # one made before a restart: in the file
        app.last_rewind = await asyncio.to_thread(saved_undo, agent)
    offer = undo_offer(app)
    if not points and offer is None:
        app.output("nothing to rewind yet: no prompt was sent in this session")
        return
    session_id = agent.session_id
    while True:
        picked = await app.push_screen_wait(RewindPicker(points, undo_words(*offer) if offer else None,
                                                         on_shown=app.key_hold.release))
        if picked is None:
            return
        if picked == UNDO_ID and offer is not None:
            await undo_last(app, checkpointer, *offer)
            return
        point = points[int(picked) - 1]
        plan, code_reason = await plan_of(checkpointer, point, session_id)
        note = PREIMAGES_NOTE if isinstance(checkpointer, PreimageCheckpointer) else None
        choice = await app.push_screen_wait(RewindMenu(point, menu_choices(code_reason), plan, note=note))
        if choice is None:
            continue  # Esc: back to the prompts
        if choice == NEVER_MIND:
            return
        mode = RewindMode(choice)
        answer = PreviewAnswer()
        if mode.code and plan is not None:
            what = "code and conversation" if mode.conversation else "code"
            got = await app.push_screen_wait(RewindPreview(plan, f"Restore {what} to before prompt {point.index}",
                                                           subtitle=f"“{one_line(point.text)}”"))
            if got is None:
                app.output("rewind cancelled: nothing was changed")
                return
            answer = got
        if app.busy or app.agent is not agent:
            app.output("rewind cancelled: a run started meanwhile")
            return
        await apply(app, checkpointer, point, mode, plan, answer)
        return


async def apply(app: ChatHost, checkpointer: Snapshots | None, point: RestorePoint, mode: RewindMode,
                plan: RestorePlan | None, answer: PreviewAnswer) -> None:
    agent = app.agent
    assert agent is not None
    chosen = with_conflicts(plan, answer) if plan is not None and mode.code else None
    try:
        outcome = await asyncio.to_thread(rewind, agent.transcript, checkpointer, point, mode, plan=chosen,
                                          include_conflicts=True, session_id=agent.session_id)
    except StalePlan:
        app.output("✗ files changed while the preview was open: nothing was restored · /rewind to look again")
        return
    except _FAILURES as error:
        app.output(f"✗ cannot rewind: {error}")
        return
    parts: list[str] = []
    if outcome.restore is not None and plan is not None:
        parts.append(files_words(outcome.restore, plan, answer))
    if mode.conversation:
        await show_conversation(app, agent.messages)
        app.prompt.set_text(point.text)
        parts.append("the prompt is back in the input")
    target = {RewindMode.BOTH: "code and conversation", RewindMode.CODE: "code",
              RewindMode.CONVERSATION: "conversation"}[mode]
    app.transcript.add_notice(f"⏪ rewound {target} to before prompt {point.index} · {' · '.join(parts)}"
                              " · /rewind to undo", "info")
    app.transcript.follow()
    app.last_rewind = RewindUndo(
        agent=agent, index=point.index,
        undo_snapshot=outcome.restore.undo.id if outcome.restore is not None else None,
        previous=outcome.previous if mode.conversation else None,
        after=frozenset(m.id for m in visible(agent.messages)), prompt_text=point.text)
    app.refresh_context()
    app.prompt.focus()


async def undo_last(app: ChatHost, checkpointer: Snapshots | None, last: RewindUndo, conversation: bool) -> None:
    from ..rewind_preview import PreviewAnswer, RewindPreview

    agent = app.agent
    assert agent is not None
    session_id = agent.session_id
    plan: RestorePlan | None = None
    answer = PreviewAnswer()
    if last.undo_snapshot is not None:
        try:
            plan = await asyncio.to_thread(plan_undo, checkpointer, last.undo_snapshot, session_id=session_id)
        except _FAILURES as error:
            app.output(f"✗ cannot undo the rewind: {error}")
            return
        if plan is not None and not plan.empty:
            got = await app.push_screen_wait(RewindPreview(plan, "Undo the last rewind: put the files back",
                                                           confirm="undo"))
            if got is None:
                app.output("undo cancelled: nothing was changed")
                return
            answer = got
    try:
        outcome = await asyncio.to_thread(
            undo_rewind, agent.transcript, checkpointer, undo_snapshot=last.undo_snapshot,
            previous=last.previous if conversation else None,
            plan=with_conflicts(plan, answer) if plan is not None else None, include_conflicts=True,
            session_id=session_id)
    except StalePlan:
        app.output("✗ files changed while the preview was open: nothing was put back · /rewind to look again")
        return
    except _FAILURES as error:
        app.output(f"✗ cannot undo the rewind: {error}")
        return
    app.last_rewind = None
    parts: list[str] = []
    if outcome.restore is not None and plan is not None:
        parts.append(files_words(outcome.restore, plan, answer))
    if outcome.conversation_restored:
        await show_conversation(app, agent.messages)
        if app.prompt.text == last.prompt_text:
            app.prompt.set_text("")
        parts.append("the conversation is back as it was")
    elif last.previous is not None:
        parts.append("the conversation went on since the rewind, so it stays as it is")
    app.transcript.add_notice(f"↶ rewind undone: {' · '.join(parts) or 'nothing to put back'}", "info")
    app.transcript.follow()
    app.refresh_context()
    app.prompt.focus()


def rewind_command(host: ChatHost) -> None:
    """/rewind (and Esc Esc): the session's prompts, then what to restore and a preview.
    Keys pressed until the list is on screen are dropped (`KeyHold`)."""
    host.key_hold.hold()
    host.run_worker(open_rewind(host), group="rewind", exclusive=True, exit_on_error=False)


def rewind_slash(host: ChatHost, _command: ParsedCommand) -> None:
    rewind_command(host)


REWIND = SlashCommand("rewind", "go back to before a prompt: the files, the conversation or both (Esc Esc)",
                      rewind_slash)
