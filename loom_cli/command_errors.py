"""How a `loom` command line ends on an error: one `loom: …` line on standard error and
an exit code, never click's usage block or a traceback.

Separate from :mod:`loom_cli.main` so that the sub-apps registered there (`loom mcp`)
fail with the same words without importing it back.
"""

from __future__ import annotations

import sys

import typer


def fail(message: str, code: int) -> None:
    sys.stderr.write(f"loom: {message}\n")
    raise typer.Exit(code)


def usage_line(error: Exception) -> str | None:
    """One line for a bad command line (click would print usage, a hint and the error on
    three), or None when ``error`` is not click's. Found by name: typer vendors click."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if "Abort" in names:
        return "loom: aborted"
    if "ClickException" not in names:
        return None
    format_message = getattr(error, "format_message", None)
    message = " ".join(str(format_message() if callable(format_message) else error).split())
    if "UsageError" not in names:
        return f"loom: {message}"
    words: list[str] = []
    ctx = getattr(error, "ctx", None)
    while ctx is not None and getattr(ctx, "parent", None) is not None:
        words.insert(0, str(ctx.info_name))  # the subcommand, e.g. `run`
        ctx = ctx.parent
    return f"loom: {message} (see {' '.join(['loom', *words, '--help'])})"

