"""The project's memory index in the system prompt.

``MEMORY.md``'s first :data:`MAX_INDEX_LINES` lines (at most :data:`MAX_INDEX_BYTES`)
are read once, when the session's prompt is assembled, and go in as one part of it: a
memory written during the session changes the folder, never the prompt, so the
provider's cached prefix stays byte-identical until the next session.
"""

from __future__ import annotations

from ..context.assembler import PromptComponent
from .entries import MemoryOperationError
from .folder import MemoryFolder

MAX_INDEX_LINES = 200
MAX_INDEX_BYTES = 25_000
PRIORITY_MEMORY = 66  # after the project's instruction files, before the skills index


def index_excerpt(text: str) -> str:
    """The part of MEMORY.md that goes in the prompt, with a note when some is left out."""
    lines = text.splitlines()
    kept = "\n".join(lines[:MAX_INDEX_LINES])
    if len(kept.encode("utf-8")) > MAX_INDEX_BYTES:
        kept = kept.encode("utf-8")[:MAX_INDEX_BYTES].decode("utf-8", "ignore").rsplit("\n", 1)[0]
    if kept != "\n".join(lines).rstrip("\n"):
        kept += (f"\n… (MEMORY.md goes on; only its first {MAX_INDEX_LINES} lines are shown here: "
                 "keep the index short and move details to topic files)")
    return kept


def memory_component(folder: MemoryFolder) -> PromptComponent:
    """The prompt part naming what the project's memory holds (its index)."""
    try:
        text = folder.index_text().strip()
    except (OSError, MemoryOperationError):
        text = ""
    if not text:
        body = "Nothing is saved yet for this project."
    else:
        body = ("Your notes from earlier sessions of this project (/memories/MEMORY.md; topic files it names are "
                "read with the memory tool). They may be out of date: check before relying on one.\n\n"
                + index_excerpt(text))
    return PromptComponent("memory index", f"# Memory\n{body}", PRIORITY_MEMORY, source=str(folder.entries_dir))
