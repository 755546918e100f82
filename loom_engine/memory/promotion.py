"""Promotion: what a session learned, proposed as notes for the project's long-term memory.

At a session's end (and at compaction) one small request — through the session's own
provider, with the conversation's tail and the memory index — asks the model which
facts are worth keeping. The answer is a list of proposals (a line to add to a memory
file, and why); nothing is written until the user says yes. The chat asks at once; a
headless run writes them to ``proposals/<session>.json`` in the memory folder, for
`loom memory proposals` and `loom memory apply`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..private_files import private_folder, write_private
from .entries import MemoryOperationError, StaleVersion
from .folder import INDEX_NAME, MemoryFolder, check_path

if TYPE_CHECKING:
    from ..messages import Message
    from ..providers.base import Provider

MAX_PROPOSALS = 5
MAX_PROPOSAL_CHARS = 400
MAX_TRANSCRIPT_CHARS = 24_000
MAX_ANSWER_TOKENS = 1024
# A conversation shorter than this taught nothing worth a request.
MIN_TRANSCRIPT_CHARS = 600
MIN_MESSAGES = 4
_SESSION_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")

PROMOTION_SYSTEM = (
    "You keep a software project's long-term memory: short notes that help in later sessions. Read the "
    "conversation and propose at most 5 facts worth keeping — stable things a future session could not easily "
    "find again: the user's stated preferences, how the project is built, tested and run, decisions and their "
    "reasons, pitfalls found. Not: what was done in this session, anything already in the memory, guesses, "
    "secrets or credentials. Answer with JSON only: "
    '{"proposals": [{"path": "MEMORY.md", "text": "- one line", "why": "a few words"}]}; '
    '{"proposals": []} when nothing is worth keeping. Use MEMORY.md unless a topic file named in the memory fits.')


@dataclass(frozen=True)
class Proposal:
    """Add ``text`` (one or a few lines) to the memory file ``path``; ``why`` for the user."""

    path: str
    text: str
    why: str = ""


def has_substance(messages: Sequence[Message]) -> bool:
    from ..context.compressor import render_transcript

    return len(messages) >= MIN_MESSAGES and len(render_transcript(messages)) >= MIN_TRANSCRIPT_CHARS


def promotion_request_text(messages: Sequence[Message], index_text: str) -> str:
    from ..context.compressor import render_transcript

    transcript = render_transcript(messages)
    if len(transcript) > MAX_TRANSCRIPT_CHARS:
        transcript = "…(earlier part left out)\n" + transcript[-MAX_TRANSCRIPT_CHARS:]
    memory = index_text.strip() or "(empty)"
    return (f"<memory>\n{memory[:8000]}\n</memory>\n\n<conversation>\n{transcript}\n</conversation>\n\n"
            "Which facts from this conversation are worth keeping? JSON only.")


async def propose(provider: Provider, model: str, messages: Sequence[Message], index_text: str) -> list[Proposal]:
    """One request for the proposals; [] when the session had no substance."""
    if not has_substance(messages):
        return []
    from ..messages import Message as MessageType
    from ..providers.base import ProviderRequest, StreamText

    request = ProviderRequest(model=model, system=PROMOTION_SYSTEM,
                              messages=(MessageType.user(promotion_request_text(messages, index_text)),),
                              tools=(), max_tokens=MAX_ANSWER_TOKENS)
    chunks: list[str] = []
    async for event in provider.stream(request):
        if isinstance(event, StreamText):
            chunks.append(event.text)
    return parse_proposals("".join(chunks))


def parse_proposals(answer: str) -> list[Proposal]:
    """The proposals in the model's answer; malformed ones are left out (never an error:
    a bad answer just proposes nothing)."""
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end <= start:
        return []
    try:
        data = json.loads(answer[start:end + 1])
    except json.JSONDecodeError:
        return []
    items = data.get("proposals") if isinstance(data, dict) else None
    found: list[Proposal] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            continue
        named = item.get("path")
        path = named.removeprefix("/memories/").strip() if isinstance(named, str) else ""
        path = path or INDEX_NAME
        try:
            check_path(path)
        except MemoryOperationError:
            path = INDEX_NAME
        why = item.get("why")
        found.append(Proposal(path, item["text"].strip()[:MAX_PROPOSAL_CHARS],
                              why.strip()[:200] if isinstance(why, str) else ""))
        if len(found) == MAX_PROPOSALS:
            break
    return found


def apply_proposals(folder: MemoryFolder, proposals: Sequence[Proposal]) -> list[str]:
    """Add each proposal to its file (compare-and-set, retried when another write came
    between); one line per file changed or per proposal refused."""
    said: list[str] = []
    for proposal in proposals:
        for _attempt in range(5):
            current = folder.get(proposal.path)
            before = current.content if current is not None else ""
            if proposal.text in before:
                said.append(f"/memories/{proposal.path}: already there")
                break
            joined = (before if not before or before.endswith("\n") else before + "\n") + proposal.text + "\n"
            try:
                folder.put(proposal.path, joined, expected=current.version if current is not None else None)
            except StaleVersion:
                continue
            except MemoryOperationError as error:
                said.append(str(error))
                break
            said.append(f"/memories/{proposal.path}: added {proposal.text.splitlines()[0][:80]}")
            break
    return said


# --- the proposals file of a headless run ---------------------------------------------------

def save_proposals(folder: MemoryFolder, session_id: str, proposals: Sequence[Proposal]) -> Path:
    if not _SESSION_NAME.match(session_id):
        raise MemoryOperationError(f"{session_id!r} is not a session id")
    private_folder(folder.proposals_dir)
    path = folder.proposals_dir / f"{session_id}.json"
    data = {"session": session_id, "created": time.time(),
            "proposals": [{"path": p.path, "text": folder.redact(p.text), "why": folder.redact(p.why)}
                          for p in proposals]}
    write_private(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def load_proposals(folder: MemoryFolder) -> list[tuple[str, list[Proposal]]]:
    """Each proposals file's session id and proposals, oldest first."""
    if not folder.proposals_dir.is_dir():
        return []
    found: list[tuple[float, str, list[Proposal]]] = []
    for path in folder.proposals_dir.glob("*.json"):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        proposals = parse_proposals(json.dumps({"proposals": data.get("proposals", [])}))
        found.append((float(data.get("created", 0)), path.stem, proposals))
    return [(session, proposals) for _, session, proposals in sorted(found)]


def discard_proposals(folder: MemoryFolder, session_id: str) -> None:
    if _SESSION_NAME.match(session_id):
        (folder.proposals_dir / f"{session_id}.json").unlink(missing_ok=True)
