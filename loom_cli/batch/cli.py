"""`loom batch`'s command line (registered by loom_cli/main.py); the work is in
:mod:`loom_cli.batch.command`, imported only when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from loom_engine.permissions.modes import PermissionMode
from loom_engine.providers.names import ProviderName
from loom_engine.sandbox.config import SandboxMode


def batch(tasks: Annotated[Path, typer.Argument(
              help="The tasks: a JSON object a line (id, prompt; optional repo, base, model, max_turns, "
                   "max_budget_usd, permission_mode). See docs/batch.md.", show_default=False)],
          out: Annotated[Path, typer.Option("--out", help="The batch folder: results.jsonl, preds.json, "
                                                          "diffs/. A rerun with the same folder goes on.")],
          workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="Tasks run at once.")] = 2,
          executor: Annotated[Literal["local", "ray"], typer.Option(
              "--executor", help="local: worker processes here; ray: workers on a Ray cluster (pip install "
                            "'loom-agent[ray]').")
          ] = "local",
          address: Annotated[str | None, typer.Option(
              "--address", help="With --executor ray: the cluster (auto, ray://host:10001); none: a local one.")
          ] = None,
          keep_worktrees: Annotated[bool, typer.Option(
              "--keep-worktrees", help="Leave each task's worktree (`git worktree list` shows them).")] = False,
          retry_failed: Annotated[bool, typer.Option(
              "--retry-failed", help="Run again the tasks that failed in an earlier run.")] = False,
          max_budget_usd: Annotated[float | None, typer.Option(
              "--max-budget-usd", min=0.0, help="Stop the batch once it has cost this much (exit 3).")] = None,
          provider: Annotated[ProviderName | None, typer.Option("--provider", help="LLM provider.")] = None,
          model: Annotated[str | None, typer.Option("--model", "-m", help="Model name (a task's own wins).")
                           ] = None,
          max_turns: Annotated[int | None, typer.Option(
              "--max-turns", min=1, help="Each task stops after this many turns (a task's own wins).")] = None,
          permission_mode: Annotated[PermissionMode | None, typer.Option(
              "--permission-mode", help="What may run without asking; a question is a denial here.")] = None,
          sandbox: Annotated[SandboxMode | None, typer.Option(
              "--sandbox", help="auto, on or off (as for `loom run`).")] = None,
          allow: Annotated[list[str] | None, typer.Option("--allow", help="Allow rule, e.g. 'bash(pytest:*)'.")
                           ] = None,
          deny: Annotated[list[str] | None, typer.Option("--deny", help="Deny rule.")] = None,
          trust_project: Annotated[bool, typer.Option(
              "--trust-project", help="Use what the repository's settings would widen, for this batch.")] = False,
          wait_for_reset: Annotated[bool, typer.Option(
              "--wait-for-reset/--no-wait-for-reset", help="At a usage limit every worker waits for the reset "
                                                           "(the default), or the batch stops (exit 5).")] = True,
          max_wait: Annotated[str | None, typer.Option(
              "--max-wait", help="The longest wait for a reset, e.g. 30m, 5h (default 5h).")] = None) -> None:
    """Run many tasks, each in its own git worktree, on warm workers (docs/batch.md)."""
    from ..usage_limits import headless_policy
    from .command import BatchRequest, main_entry
    from .job import BatchDefaults

    try:
        policy = headless_policy(wait_for_reset, max_wait)
    except ValueError as error:
        typer.echo(f"loom: {error}", err=True)
        raise typer.Exit(2) from None
    defaults = BatchDefaults(provider=provider, model=model, max_turns=max_turns, permission_mode=permission_mode,
                             sandbox=sandbox, allow=tuple(allow or ()), deny=tuple(deny or ()),
                             trust_project=trust_project, usage_limits=policy)
    raise typer.Exit(main_entry(BatchRequest(tasks_file=tasks, out_dir=out, workers=workers, executor=executor,
                                             address=address, keep_worktrees=keep_worktrees,
                                             retry_failed=retry_failed, max_budget_usd=max_budget_usd,
                                             defaults=defaults)))
