"""`loom mcp list|get|add|remove`'s command line (the sub-app registered by
loom_cli/main.py); the work is in :mod:`loom_cli.mcp_commands`, imported only when a
command runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from .command_errors import fail

if TYPE_CHECKING:
    from .mcp_commands import Places

mcp_app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                      help="The MCP servers Loom connects (the user's mcp.json and the project's .mcp.json).")

McpScope = Literal["user", "project"]


@mcp_app.callback(invoke_without_command=True)
def mcp_root(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:  # `loom mcp` alone: its help, not a usage error
        print(ctx.get_help())


def _mcp_places() -> Places:
    from loom_engine.paths import claude_config_file, config_dir, data_dir
    from loom_engine.workspace import find_workspace_root

    from .claude_folder import user_claude_home
    from .mcp_commands import Places

    return Places(find_workspace_root(Path.cwd()), config_dir(), data_dir(),
                  claude_config_file(user_claude_home()))


def _mcp_run(action: Callable[[], list[str] | str]) -> None:
    """Run one `loom mcp` action, printing its lines; its error is one line and exit 1."""
    from .mcp_commands import McpCommandError

    try:
        result = action()
    except McpCommandError as error:
        fail(str(error), 1)
    print("\n".join(result) if isinstance(result, list) else result)


@mcp_app.command("list")
def mcp_list() -> None:
    """Each configured server: its command or URL, its scope, whether a project server is approved."""
    from .mcp_commands import list_lines

    places = _mcp_places()
    _mcp_run(lambda: list_lines(places))


@mcp_app.command("get")
def mcp_get(name: Annotated[str, typer.Argument(help="The server's name.")]) -> None:
    """One server in full."""
    from .mcp_commands import get_lines

    places = _mcp_places()
    _mcp_run(lambda: get_lines(places, name))


@mcp_app.command("add", context_settings={"allow_interspersed_args": False})
def mcp_add(name: Annotated[str, typer.Argument(help="The server's name.")],
            target: Annotated[list[str] | None, typer.Argument(
                help="stdio: the command and its arguments (after --); http/sse: the URL.")] = None,
            transport: Annotated[str, typer.Option("--transport", "-t", help="stdio, http or sse.")] = "stdio",
            scope: Annotated[McpScope, typer.Option(
                "--scope", "-s", help="user: your mcp.json in Loom's config dir; project: the repository's "
                                      ".mcp.json (shared).")] = "user",
            env: Annotated[list[str] | None, typer.Option("--env", "-e", help="KEY=VALUE for a stdio server.")] = None,
            header: Annotated[list[str] | None, typer.Option(
                "--header", "-H", help="'Key: value' for an http or sse server.")] = None) -> None:
    """Add a server: `loom mcp add NAME -- COMMAND ARGS…` or `loom mcp add -t http NAME URL`
    (options go before NAME)."""
    from .mcp_commands import add, make_entry

    places = _mcp_places()
    _mcp_run(lambda: add(places, name, make_entry(transport, target or [], env or [], header or []),
                         scope))


@mcp_app.command("remove")
def mcp_remove(name: Annotated[str, typer.Argument(help="The server's name.")],
               scope: Annotated[McpScope | None, typer.Option(
                   "--scope", "-s", help="user or project (needed when both have it).")] = None) -> None:
    """Remove a server from the user's or the project's file."""
    from .mcp_commands import remove

    places = _mcp_places()
    _mcp_run(lambda: remove(places, name, scope))
