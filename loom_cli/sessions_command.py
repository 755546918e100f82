"""`loom sessions` (the list) and `loom sessions search QUERY` (every session of the user,
ranked), a command group of its own; main.py registers it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

if TYPE_CHECKING:
    from loom_engine.index.query import SearchHit

sessions_app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                           help="Saved sessions: list them (newest first), or search them all.")

# No hit is exit 1, as grep has it: `if loom sessions search X; then ...` reads naturally.
EXIT_NO_MATCH = 1
EXIT_FAILED = 2


@sessions_app.callback(invoke_without_command=True)
def sessions_root(ctx: typer.Context,
                  all_: Annotated[bool, typer.Option("--all", help="Sessions of every workspace.")] = False) -> None:
    """List saved sessions (newest first); `loom sessions search QUERY` searches them."""
    if ctx.invoked_subcommand is None:
        list_sessions(all_)


def list_sessions(all_: bool) -> None:
    from loom_engine.paths import sessions_dir
    from loom_engine.sessions.store import SessionStore
    from loom_engine.workspace import find_workspace_root

    store = SessionStore(sessions_dir())
    infos, warnings = store.list(None if all_ else find_workspace_root(Path.cwd()))
    for warning in warnings:
        sys.stderr.write(f"loom: skipped: {warning}\n")
    if not infos:
        print("no sessions" + ("" if all_ else " in this workspace (use --all for every workspace)"))
        return
    print(f"{'ID':<23} {'UPDATED':<16} {'PROMPTS':>7}  {'WORKSPACE':<30} FIRST PROMPT")
    for info in infos:
        updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        prompt = " ".join(info.first_prompt.split())[:60]
        print(f"{info.id:<23} {updated:<16} {info.prompts:>7}  {info.workspace[-30:]:<30} {prompt}")


@sessions_app.command("search")
def search_command(
        query: Annotated[str, typer.Argument(help="Words to find (matched whole, all of them); part of a path "
                                                  "or identifier of 3+ characters is found too.")],
        output: Annotated[Literal["text", "json"], typer.Option(
            "--output", "-o", help="text: one line per session; json: a list of objects.")] = "text",
        project: Annotated[Path | None, typer.Option(
            "--project", help="Only sessions of this project (its repository), or of projects beneath "
                              "this folder.")] = None,
        limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=200, help="At most this many.")] = 20,
) -> None:
    """Search every session of this user (prompts, answers, tools, paths), best match first.
    Exit 1 when nothing matches, as grep does."""
    import sqlite3

    from loom_engine.index.query import word_query
    from loom_engine.index.schema import IndexUnusable
    from loom_engine.index.session_index import SessionIndex
    from loom_engine.workspace import find_workspace_root

    if word_query(query) is None:
        sys.stderr.write("loom: nothing to search for: the query has no words\n")
        raise typer.Exit(EXIT_FAILED)
    folder = str(find_workspace_root(project.expanduser())) if project is not None else None
    try:
        hits = SessionIndex.for_user().search(query, project=folder, limit=limit)
    except (sqlite3.Error, OSError, IndexUnusable) as error:
        sys.stderr.write(f"loom: cannot search the sessions: {error}\n")
        raise typer.Exit(EXIT_FAILED) from None
    if output == "json":
        print(json.dumps([hit_json(hit) for hit in hits], ensure_ascii=False))
    elif hits:
        print("\n".join(hit_line(hit) for hit in hits))
    else:
        where = f" of {folder}" if folder else ""
        print(f"no session{where} matches {' '.join(query.split())!r}")
    if not hits:
        raise typer.Exit(EXIT_NO_MATCH)


def _date(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(when))


def hit_line(hit: SearchHit) -> str:
    """One plain line: id, last written, project, and the snippet with «matches» marked."""
    return f"{hit.session_id}  {_date(hit.updated)}  {hit.project}  {hit.marked_snippet()}"


def hit_json(hit: SearchHit) -> dict[str, Any]:
    return {"session_id": hit.session_id, "created": _iso(hit.created), "updated": _iso(hit.updated),
            "project": hit.project, "title": hit.title, "prompts": hit.prompts,
            "snippet": hit.marked_snippet(), "path": hit.path}


def _iso(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(when))
