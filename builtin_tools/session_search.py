"""session_search: find earlier sessions ("how did we fix X last month") in the search
index over every session of the user; read-only.

By default only this workspace's sessions are searched, and that asks nothing. Another
project's sessions (a folder, or ``project: "*"`` for all) are read like a file outside
the workspace: the permission rules decide, and by default the user is asked — a
repository's instructions must not lead the model into the user's other work unnoticed.
The current session is left out (its conversation is already in context).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from loom_engine.paths import sessions_dir
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

if TYPE_CHECKING:  # sqlite3 and the index load at the first search, not at start-up
    from loom_engine.index.query import SearchHit
    from loom_engine.index.session_index import SessionIndex

MAX_RESULTS = 20
MAX_TITLE_CHARS = 160
MAX_OUTPUT_CHARS = 6000
EVERY_PROJECT = "*"


class SessionSearchInput(BaseModel):
    query: str = Field(min_length=1, description=(
        "Words to find in earlier sessions' prompts, answers, commands and file paths (all of them, "
        "matched whole; part of a path or identifier of 3+ characters is found too)."))
    project: str | None = Field(None, description=(
        "Whose sessions: omitted for this workspace's; a folder path for that project's (or those beneath "
        "it); \"*\" for every project's."))
    limit: int = Field(5, ge=1, le=MAX_RESULTS, description="At most this many sessions, best match first.")


class SessionSearchTool(BaseTool[SessionSearchInput]):
    name = "session_search"
    description = (
        "Search the user's earlier Loom sessions (prompts, answers, tools run, files touched), best "
        "match first, each with its id, date, project, first prompt and a snippet with the match "
        "between « and ». Use it when the user refers to past work (\"how did we fix X last month\", "
        "\"the migration we did before\"). Searches this workspace's sessions unless `project` says "
        "otherwise; the current session is left out.")
    input_model = SessionSearchInput
    is_concurrency_safe = True
    is_read_only = True
    guidance = "session_search finds earlier sessions of the user by their words, paths and commands."

    def __init__(self, index: SessionIndex | None = None) -> None:
        self._index = index  # None: the user's own index, found when first used

    def permission_target(self, args: SessionSearchInput, ctx: ToolContext) -> FileAccess | None:
        """Nothing for this workspace's sessions; another project's folder, or the
        sessions folder itself for every project's, read as a file outside would be."""
        if not args.project:
            return None
        if args.project == EVERY_PROJECT:
            return FileAccess(paths=(str(self._index.sessions_root if self._index else sessions_dir()),),
                              write=False)
        return FileAccess(paths=(str(ctx.resolve(args.project)),), write=False)

    async def run(self, args: SessionSearchInput, ctx: ToolContext) -> ToolOutput:
        import sqlite3

        from loom_engine.index.schema import IndexUnusable
        from loom_engine.index.session_index import SessionIndex

        index = self._index or SessionIndex.for_user()
        if args.project == EVERY_PROJECT:
            project = None
        elif args.project:
            project = str(ctx.resolve(args.project))
        else:
            project = str(ctx.workspace.root)
        exclude = (ctx.session_id,) if ctx.session_id else ()
        try:
            hits = await asyncio.to_thread(index.search, args.query, project=project, limit=args.limit,
                                           exclude=exclude)
        except (sqlite3.Error, OSError, IndexUnusable) as error:
            return ToolOutput(f"The session index cannot be searched: {error}", is_error=True)
        where = "every project" if project is None else project
        if not hits:
            return ToolOutput(f"No earlier session of {where} matches {args.query!r}.")
        return ToolOutput(render_hits(hits, args.query, where))


def render_hits(hits: list[SearchHit], query: str, where: str) -> str:
    """The hits as the model reads them, at most :data:`MAX_OUTPUT_CHARS` long."""
    lines = [f"{len(hits)} earlier session{'s' if len(hits) != 1 else ''} of {where} match {query!r}, "
             "best first:"]
    for number, hit in enumerate(hits, 1):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.updated))
        title = hit.title if len(hit.title) <= MAX_TITLE_CHARS else hit.title[:MAX_TITLE_CHARS - 1] + "…"
        entry = (f"{number}. {hit.session_id} · {when} · {hit.project} · {hit.prompts} prompt"
                 f"{'s' if hit.prompts != 1 else ''}\n   first prompt: {title or '(none)'}\n"
                 f"   match: {hit.marked_snippet()}")
        if sum(len(line) + 1 for line in lines) + len(entry) > MAX_OUTPUT_CHARS:
            lines.append(f"({len(hits) - number + 1} more not shown; narrow the query)")
            break
        lines.append(entry)
    return "\n".join(lines)
