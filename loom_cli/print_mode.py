"""`loom -p "task"`: Claude Code's headless flag, read as `loom run`."""

from __future__ import annotations

PRINT_FLAGS = ("-p", "--print")


def print_as_run(args: list[str], commands: set[str]) -> list[str]:
    """Claude Code's `-p`/`--print` (headless) is `loom run`: `loom -p "task" -o json` runs
    as `loom run "task" -o json`. Only where no subcommand is named (`loom mcp add x npx -p`
    keeps its own `-p`), and not after a `--`."""
    if not args or args[0] in commands:
        return args
    head = args[:args.index("--")] if "--" in args else args
    flags = [i for i, arg in enumerate(head) if arg in PRINT_FLAGS]
    if not flags:
        return args
    return ["run", *(arg for i, arg in enumerate(args) if i not in flags)]
