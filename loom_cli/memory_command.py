"""`loom memory`: the project's long-term memory — list, show, edit, clear, and review what
sessions proposed (`proposals`, `apply`). A command group of its own; main.py registers it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from loom_engine.memory.folder import MemoryFolder

memory_app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                         help="The project's long-term memory (what the model saved across sessions).")

ProjectOption = Annotated[Path, typer.Option("--project", help="The project (any folder in it); default: here.")]
EXIT_FAILED = 1


def _folder(project: Path) -> MemoryFolder:
    from loom_engine.memory.folder import MemoryFolder
    from loom_engine.workspace import find_workspace_root

    return MemoryFolder.for_project(find_workspace_root(project.expanduser().resolve()))


def _fail(message: str) -> typer.Exit:
    sys.stderr.write(f"loom: {message}\n")
    return typer.Exit(EXIT_FAILED)


@memory_app.callback(invoke_without_command=True)
def memory_root(ctx: typer.Context, project: ProjectOption = Path(".")) -> None:
    """List the project's memory files (`loom memory list`)."""
    if ctx.invoked_subcommand is None:
        list_command(project)


@memory_app.command("list")
def list_command(project: ProjectOption = Path(".")) -> None:
    """List the project's memory files, with their first line."""
    from .memory_views import list_text

    print(list_text(_folder(project)))


@memory_app.command("show")
def show_command(path: Annotated[str | None, typer.Argument(help="A memory file (default MEMORY.md).")] = None,
                 project: ProjectOption = Path(".")) -> None:
    """Print a memory file."""
    from loom_engine.memory.entries import MemoryOperationError

    from .memory_views import show_text

    try:
        print(show_text(_folder(project), path))
    except MemoryOperationError as error:
        raise _fail(str(error)) from None


@memory_app.command("edit")
def edit_command(path: Annotated[str | None, typer.Argument(help="A memory file (default MEMORY.md).")] = None,
                 project: ProjectOption = Path(".")) -> None:
    """Edit a memory file in $VISUAL / $EDITOR (created when missing)."""
    from loom_engine.memory.entries import MemoryOperationError

    from .memory_views import edit_entry

    try:
        print(edit_entry(_folder(project), path, run_editor))
    except (MemoryOperationError, OSError) as error:
        raise _fail(str(error)) from None


def run_editor(text: str) -> str:
    """The text as the user's editor left it."""
    from .tui.external_editor import editor_command

    handle, name = tempfile.mkstemp(prefix="loom-memory-", suffix=".md")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        done = subprocess.run([*editor_command(os.environ), name], check=False)
        if done.returncode != 0:
            raise OSError(f"the editor exited with status {done.returncode}; nothing was saved")
        return Path(name).read_text(encoding="utf-8")
    finally:
        Path(name).unlink(missing_ok=True)


@memory_app.command("clear")
def clear_command(yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
                  project: ProjectOption = Path(".")) -> None:
    """Remove every memory file of the project."""
    from .memory_views import clear_memory

    folder = _folder(project)
    if not yes and not typer.confirm(f"Remove every memory file in {folder.entries_dir}?", default=False):
        raise typer.Exit(EXIT_FAILED)
    print(clear_memory(folder))


@memory_app.command("proposals")
def proposals_command(project: ProjectOption = Path(".")) -> None:
    """Show what sessions proposed to remember and nobody answered yet (nothing is applied
    without you)."""
    from loom_engine.memory.promotion import load_proposals

    found = load_proposals(_folder(project))
    if not found:
        print("No memory proposals to review.")
        return
    for session, proposals in found:
        print(f"session {session}:")
        for number, proposal in enumerate(proposals, 1):
            why = f"  ({proposal.why})" if proposal.why else ""
            print(f"  {number}. /memories/{proposal.path}: {proposal.text}{why}")
    print("Apply with: loom memory apply SESSION [NUMBER...]  (or --discard)")


@memory_app.command("apply")
def apply_command(session: Annotated[str, typer.Argument(help="The session whose proposals to apply.")],
                  numbers: Annotated[list[int] | None, typer.Argument(help="Only these (default: all).")] = None,
                  discard: Annotated[bool, typer.Option("--discard", help="Apply none; remove them.")] = False,
                  project: ProjectOption = Path(".")) -> None:
    """Apply a session's memory proposals (all, or those numbered), then remove them."""
    from loom_engine.memory.promotion import apply_proposals, discard_proposals, load_proposals

    folder = _folder(project)
    found = dict(load_proposals(folder))
    if session not in found:
        raise _fail(f"no proposals from session {session} (loom memory proposals lists them)")
    proposals = found[session]
    if not discard:
        wanted = numbers or list(range(1, len(proposals) + 1))
        bad = [n for n in wanted if not 1 <= n <= len(proposals)]
        if bad:
            raise _fail(f"no proposal {bad[0]} (session {session} has {len(proposals)})")
        for line in apply_proposals(folder, [proposals[n - 1] for n in wanted]):
            print(line)
    discard_proposals(folder, session)
    if discard:
        print(f"Discarded the proposals of session {session}.")
