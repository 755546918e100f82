"""/memory: the project's long-term memory in the chat — list, show, edit in $EDITOR, clear.
What each does is `loom memory`'s (memory_views); this is only the chat's side of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...slash_commands import ParsedCommand, SlashCommand

if TYPE_CHECKING:
    from loom_engine.memory.folder import MemoryFolder

    from ..chat_host import ChatHost

USAGE = "/memory [list | show PATH | edit [PATH] | clear]"
OFF = "memory is off ([memory] enabled = false in your config.toml)"


def _folder(host: ChatHost) -> MemoryFolder | None:
    from loom_engine.memory.folder import MemoryFolder

    agent = host.agent
    if agent is None or agent.registry.get("memory") is None:
        return None
    return MemoryFolder.for_project(host.workspace_root)  # the folder the agent's memory tool writes


def memory(host: ChatHost, command: ParsedCommand) -> None:
    from loom_engine.memory.entries import MemoryOperationError

    from ...memory_views import edit_entry, list_text, show_text

    folder = _folder(host)
    if folder is None:
        host.output(OFF)
        return
    verb, _, rest = (command.arg or "list").strip().partition(" ")
    path = rest.strip() or None
    try:
        if verb == "list":
            host.output(list_text(folder))
        elif verb == "show":
            host.output(show_text(folder, path))
        elif verb == "edit":
            host.output(edit_entry(folder, path, lambda text: _edit(host, text)))
        elif verb == "clear":
            _clear(host, folder)
        else:
            host.output(f"usage: {USAGE}")
    except (MemoryOperationError, OSError) as error:
        host.output(f"/memory {verb}: {error}")


def _edit(host: ChatHost, text: str) -> str:
    from textual.app import App, SuspendNotSupported

    from ..external_editor import edit_in_editor

    assert isinstance(host, App)  # the chat app is the host
    try:
        edited = edit_in_editor(host, text)
    except SuspendNotSupported as error:
        raise OSError(f"cannot open an editor here ({error})") from None
    if edited is None:
        return text
    return edited + "\n" if edited and not edited.endswith("\n") else edited


def _clear(host: ChatHost, folder: MemoryFolder) -> None:
    from ...memory_views import clear_memory
    from ..confirm import Confirm

    count = len(folder.list())
    if count == 0:
        host.output("The project's memory is already empty.")
        return

    def confirmed(yes: bool | None) -> None:
        host.output(clear_memory(folder) if yes else "/memory clear cancelled: nothing removed")

    host.push_screen(Confirm(f"Remove all {count} memory file{'s' if count != 1 else ''} of this project?",
                             "Sessions will no longer see them; this cannot be undone."), callback=confirmed)


async def offer_proposals(host: ChatHost) -> str:
    """At a session's end (/clear, quitting): what the model proposes to remember (and
    what compactions proposed), asked about; the answer applied, and said ("" when
    nothing was asked). Only when ``[memory] promote`` is on and the session had substance."""
    from loom_engine.memory.promotion import apply_proposals

    from ..memory_proposals import MemoryProposalsScreen

    promoter = host.lifecycle.promoter
    folder = _folder(host)
    if promoter is None or folder is None:
        return ""
    proposals = await promoter.proposals()  # [] when the session taught nothing (or the request failed)
    if not proposals:
        return ""
    chosen = await host.push_screen_wait(MemoryProposalsScreen(proposals))
    if not chosen:
        promoter.answered()
        return "memory proposals skipped: nothing saved"
    applied = apply_proposals(folder, [proposals[index] for index in chosen])
    promoter.answered()  # after they are written: a chat killed on the way still has the file
    return "saved to memory:\n" + "\n".join(applied)


MEMORY = SlashCommand("memory", "the project's memory: list, show, edit, clear", memory, usage=USAGE,
                      max_words=None)
