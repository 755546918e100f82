"""The session's sandbox: opened once from the ``[sandbox]`` settings, with the places inside
the workspace that commands must not change.

Besides what the engine always keeps read-only (``.git/hooks``, ``.git/config``, ``.loom/``,
``.claude/``), a command must not change:

* Loom's own config and data folders when they lie in the workspace (Loom opened in
  ``~``, a dotfiles repository): a planted ``config.toml`` or ``mcp.json`` would run at the
  next start;
* what a trusted project hook runs: the folder of each script it was trusted with, and the
  folder of the settings file that declares it — otherwise the model's own command could
  change the hook's code between two tool calls. A script at the top of a workspace
  protects only itself (the whole workspace cannot be read-only).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .sandbox_report import SandboxFacts
from .sandbox_settings import ReadDenials, SandboxSettings, sandbox_config

if TYPE_CHECKING:
    from loom_engine.sandbox import Machine, Sandbox
    from loom_engine.workspace import Workspace

    from .hook_setup import HookPlan


def read_only_in_workspace(roots: Sequence[Path], own_folders: Iterable[Path], hooks: HookPlan | None
                    ) -> tuple[Path, ...]:
    """The absolute paths inside the workspace ``roots`` (the workspace, its --add-dir
    folders) that the sandbox binds read-only on top of the engine's own list."""
    real_roots = [_real(root) for root in roots]

    def inside(path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in real_roots)

    found: list[Path] = [folder for folder in map(_real, own_folders) if inside(folder)]
    if hooks is not None and real_roots:
        root = real_roots[0]  # hooks run in the workspace root; their sources name files there
        found += [_real(root / hook.source).parent for hook in hooks.use.hooks if hook.in_project]
        # What every project hook's trust covers (loom_cli.hook_trust), the list the file tools'
        # ask rules use too; an untrusted hook's as well: a yes at the next start would trust
        # what a command wrote there.
        found += [path for path in map(_real, hooks.protected_paths()) if inside(path)]
    return tuple(dict.fromkeys(path for path in found if path not in real_roots))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def open_session_sandbox(chosen: SandboxSettings, workspace: Workspace, hooks: HookPlan | None, *,
                         machine: Machine | None = None, denials: ReadDenials | None = None,
                         read_only: Sequence[Path] = ()) -> Sandbox:
    """The session's sandbox, from the ``[sandbox]`` settings: on, off, or unavailable with
    its reason and fix in ``status`` (opening it never fails). ``denials``: what the read
    deny rules hide from every command; ``read_only``: more folders no command may change
    when they lie in the workspace (Claude Code's user folder, which Loom reads)."""
    from loom_engine.paths import protected_paths
    from loom_engine.sandbox import open_sandbox

    own = protected_paths()  # the same folders the file tools' ask rules guard
    config = sandbox_config(chosen, workspace.root, home=Path.home(), own_folders=own,
                            denied_reads=denials.paths if denials else ())
    protected = read_only_in_workspace((workspace.root, *workspace.extra_dirs), (*own, *read_only), hooks)
    return open_sandbox(config, workspace, protected=protected, machine=machine)


def facts_of(sandbox: Sandbox, mode_source: str) -> SandboxFacts:
    """What `loom sandbox` and `/sandbox` show of ``sandbox``, as the workspace is now."""
    config = sandbox.config
    layout = sandbox.layout() if sandbox.active else None
    return SandboxFacts(status=sandbox.status, mode_source=mode_source, workspace=sandbox.workspace.root,
                        writable=layout.writable if layout else (),
                        read_only=(*layout.read_only, *layout.missing) if layout else (),
                        unreadable=config.deny_read, notes=layout.notes if layout else ())
