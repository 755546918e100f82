"""`loom server status|stop`'s command line (the sub-app registered by loom_cli/main.py);
the work is in :mod:`loom_cli.warm.control`, imported only when a command runs."""

from __future__ import annotations

import typer

server_app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                         help="The warm server that starts `loom` quickly (see the README's "
                              "\"Start-up: the warm server\").")


@server_app.callback(invoke_without_command=True)
def server_root(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())


@server_app.command("status")
def server_status() -> None:
    """Each warm server of this user: its socket, pid, age, commands running, idle exit."""
    from .warm.control import server_lines

    print("\n".join(server_lines("status")))


@server_app.command("stop")
def server_stop() -> None:
    """Stop this user's warm servers (commands they are running finish first)."""
    from .warm.control import server_lines

    print("\n".join(server_lines("stop")))
