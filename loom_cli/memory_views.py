"""What `loom memory` and the chat's `/memory` show and do with a project's memory folder:
list, show, edit (a round trip through the user's editor, compare-and-set on the way
back), clear."""

from __future__ import annotations

from collections.abc import Callable

from loom_engine.memory.entries import MemoryOperationError, StaleVersion
from loom_engine.memory.folder import INDEX_NAME, MemoryFolder

ROOT = "/memories"


def entry_path(given: str | None) -> str:
    """A path as the user types it (``topics/x.md``, ``/memories/x.md``), as stored;
    MEMORY.md when none is given."""
    if not given:
        return INDEX_NAME
    text = given.strip()
    if text.startswith(ROOT + "/"):
        text = text[len(ROOT) + 1:]
    return text


def list_text(folder: MemoryFolder) -> str:
    entries = folder.list()
    if not entries:
        return f"No memory saved for this project yet ({folder.entries_dir})."
    lines = [f"{len(entries)} memory file{'s' if len(entries) != 1 else ''} for this project:"]
    for entry in entries:
        first = next((line.strip() for line in entry.content.splitlines() if line.strip()), "")
        lines.append(f"  {ROOT}/{entry.path}  {len(entry.content.encode()):,} B  {first[:60]}")
    lines.append(f"kept in {folder.entries_dir}")
    pending = proposal_files(folder)
    if pending:
        lines.append(f"{len(pending)} proposal file{'s' if len(pending) != 1 else ''} to review: loom memory proposals")
    return "\n".join(lines)


def show_text(folder: MemoryFolder, given: str | None) -> str:
    path = entry_path(given)
    entry = folder.get(path)
    if entry is None:
        raise MemoryOperationError(f"{ROOT}/{path} does not exist (loom memory list shows what does)")
    return f"{ROOT}/{path}:\n{entry.content.rstrip()}" if entry.content.strip() else f"{ROOT}/{path} is empty."


def edit_entry(folder: MemoryFolder, given: str | None, run_editor: Callable[[str], str]) -> str:
    """Let the user edit the entry (created when missing) in their editor; what changed, in
    one line. A write by the model meanwhile is not overwritten: the edit is refused."""
    path = entry_path(given)
    current = folder.get(path)
    before = current.content if current is not None else ""
    edited = run_editor(before)
    if edited == before:
        return f"{ROOT}/{path}: unchanged"
    try:
        saved = folder.put(path, edited, expected=current.version if current is not None else None)
    except StaleVersion:
        raise MemoryOperationError(f"{ROOT}/{path} changed while you were editing it; your edit was not saved "
                                   "(run the edit again)") from None
    removed = " (secrets removed)" if saved.content != edited else ""
    return f"{ROOT}/{path}: saved{removed}"


def clear_memory(folder: MemoryFolder) -> str:
    count = folder.clear()
    return f"Cleared the project's memory ({count} file{'s' if count != 1 else ''} removed)."


def proposal_files(folder: MemoryFolder) -> list[str]:
    if not folder.proposals_dir.is_dir():
        return []
    return sorted(p.name for p in folder.proposals_dir.glob("*.json") if p.is_file() and not p.is_symlink())
